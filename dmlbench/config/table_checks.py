"""What an experiment's table prints, checked when the catalogue loads: the paper's numbers
(`reported`), settings named in the title, and the paper's layout."""

from __future__ import annotations

from dmlbench.core.errors import ConfigError


def check_reported(exp: dict, where: str) -> None:
    """The paper's numbers name a run of the experiment (a method, or method@variant of a
    sweep), one of its datasets and a metric of its table."""
    labels = set(exp["methods"]) | {f"{m}@{v}" for m in exp["methods"] for v in exp.get("sweep") or {}}
    metrics = set((exp.get("table") or {}).get("metrics") or [])
    for method, per_dataset in (exp.get("reported") or {}).items():
        if method not in labels:
            raise ConfigError(
                f"{where}.reported: {method!r} is none of the experiment's runs ({', '.join(sorted(labels))})"
            )
        for dataset, values in per_dataset.items():
            if dataset not in exp["datasets"]:
                raise ConfigError(
                    f"{where}.reported.{method}: dataset {dataset!r} is not among "
                    f"the experiment's datasets {exp['datasets']}"
                )
            extra = sorted(set(values) - metrics) if metrics else []
            if extra:
                raise ConfigError(
                    f"{where}.reported.{method}.{dataset}: {extra} not among the table's metrics {sorted(metrics)}"
                )


def check_title(plan, exp: dict, where: str) -> None:
    """Each `{setting.path}` of a title names a training setting (a field of dmlbench/run_config/sections.py)."""
    from dmlbench.config.steps import TITLE_SETTING

    for path in TITLE_SETTING.findall(exp.get("title") or ""):
        value = plan.defaults
        for part in path.split("."):
            if not isinstance(value, dict) or part not in value:
                raise ConfigError(
                    f"{where}.title: {{{path}}} is no training setting; name a key path of "
                    f"the settings (docs/generated/settings.md; e.g. {{record.scatter_epochs}}) "
                    "or write the value"
                )
            value = value[part]


def check_layout(exp: dict, where: str) -> None:
    """`layout.rows` lists every method and quoted row of the table once, in the paper's order
    (a quoted row `joined` to a method's row is not a row of its own); the other keys name the
    experiment's methods, quoted rows, datasets, metrics and columns."""
    layout = exp.get("layout")
    if not layout:
        return
    known_keys = ["rows", "labels", "datasets", "metrics", "joined", "bands", "notes", "datasets_as_rows"]
    extra = set(layout) - set(known_keys)
    if extra:
        raise ConfigError(f"{where}.layout: unknown keys {sorted(extra)}; known: {', '.join(known_keys)}")
    joined = layout.get("joined") or {}
    quoted = list(exp.get("quoted") or {})
    for method, row in joined.items():
        if method not in exp["methods"] or row not in quoted:
            raise ConfigError(
                f"{where}.layout.joined: {method}: {row!r} must join a method of the "
                f"experiment to one of its quoted rows ({', '.join(quoted) or 'none'})"
            )
    expected = [q for q in quoted if q not in joined.values()] + list(exp["methods"])
    rows = layout.get("rows") or expected
    missing = [r for r in expected if r not in rows]
    unknown = [r for r in rows if r not in expected]
    repeated = sorted({r for r in rows if rows.count(r) > 1})
    if missing or unknown or repeated:
        raise ConfigError(
            f"{where}.layout.rows must list each method and quoted row once: "
            + "; ".join(
                f"{what} {names}"
                for what, names in (("missing", missing), ("unknown", unknown), ("repeated", repeated))
                if names
            )
        )
    metrics = (exp.get("table") or {}).get("metrics") or []
    for key, known, what in (
        ("labels", exp["methods"], "methods"),
        ("datasets", exp["datasets"], "datasets"),
        ("metrics", metrics, "table metrics"),
    ):
        stray = sorted(set(layout.get(key) or {}) - set(known))
        if stray:
            raise ConfigError(f"{where}.layout.{key}: {stray} are not among the experiment's {what}")
    columns = rows if layout.get("datasets_as_rows") else exp["datasets"]
    banded = [key for keys in (layout.get("bands") or {}).values() for key in keys]
    for label, keys in (layout.get("bands") or {}).items():
        start = columns.index(keys[0]) if keys and keys[0] in columns else -1
        if (
            start < 0
            or list(columns[start : start + len(keys)]) != list(keys)
            or any(banded.count(k) > 1 for k in keys)
        ):
            raise ConfigError(
                f"{where}.layout.bands.{label}: {keys} must be consecutive columns of the "
                f"table ({', '.join(columns)}), each under one band"
            )
