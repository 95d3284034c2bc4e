"""What a fair experiment (`kind: fair`) asks of the catalogue, checked when the plan loads:

- the recipe guard: a method's own `train` may set only the experiment's `necessities` for that
  method (each with its reason); every other key is the protocol's and held equal for all;
- the paper numbers: `paper_numbers` names, for every method, the experiment and row whose
  Recall@1 "paper vs fair" shows beside it, or says (`none: <why>`) that the papers print none;
- `omitted`: catalogue methods left out of the experiment, each with the reason.
"""

from __future__ import annotations

from dmlbench.config.loading import printed
from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import did_you_mean

# settings that no necessity can unlock: the trunk, the input and the budget every method shares
PROTOCOL_CORE = (
    "model.backbone",
    "model.pretrained",
    "model.embedding_dim",
    "model.pooling",
    "model.frozen_bn",
    "input",
    "optimizer.name",
    "optimizer.lr",
    "optimizer.weight_decay",
    "batch.size",
    "epochs",
    "batches_per_epoch",
    "early_stopping",
    "eval.every",
)


def leaf_paths(tree: dict, prefix: str = "") -> list[str]:
    """The dotted paths of a nested mapping's leaves (`{batch: {per_class: 2}}` → `batch.per_class`)."""
    out = []
    for key, value in (tree or {}).items():
        path = f"{prefix}{key}"
        out += leaf_paths(value, f"{path}.") if isinstance(value, dict) else [path]
    return out


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + ".")


def check_necessities(plan, key: str, where: str) -> None:
    """`necessities`: {method of the experiment: {dotted setting: reason}}, never the protocol's core."""
    exp = plan.experiments[key]
    for method, needs in (exp.get("necessities") or {}).items():
        if method not in exp["methods"]:
            raise ConfigError(f"{where}.necessities: {method!r} is not among the experiment's methods")
        if not isinstance(needs, dict) or not needs:
            raise ConfigError(f"{where}.necessities.{method}: give {{<setting>: <why the method needs it>}}")
        for path, reason in needs.items():
            if not isinstance(reason, str) or not reason.strip():
                raise ConfigError(f"{where}.necessities.{method}.{path}: say why the method needs it (a text)")
            if path.split(".")[0] not in plan.defaults:
                raise ConfigError(
                    f"{where}.necessities.{method}: {path!r} is no training setting (docs/generated/settings.md)"
                )
            core = next((c for c in PROTOCOL_CORE if _under(path, c) or _under(c, path)), None)
            if core:
                raise ConfigError(
                    f"{where}.necessities.{method}: {path} would let the method change {core}, "
                    f"which the fair protocol holds equal for every method"
                )


def check_method_train(plan, key: str, where: str) -> None:
    """Every key a method's `train` sets is one of its necessities; else refused, naming both."""
    exp = plan.experiments[key]
    check_necessities(plan, key, where)
    for method in exp["methods"]:
        allowed = list(((exp.get("necessities") or {}).get(method) or {}))
        entry = plan.methods[method]
        for path in leaf_paths(entry.get("train")) + [
            p for own in (entry.get("per_dataset") or {}).values() for p in leaf_paths(own.get("train"))
        ]:
            if not any(_under(path, a) for a in allowed):
                raise ConfigError(
                    f"{where}: method {method}.train sets {path}, which the fair protocol holds "
                    f"equal for every method; use a method entry without it, or, if the "
                    f"method cannot work without it, list it in {key}.necessities.{method} "
                    f"with the reason"
                )


def check_fair_methods(plan, key: str, where: str) -> None:
    """A trunk-ranked experiment's `fair_methods`: its method → suite.fair's id of it (or null)."""
    exp, fair = plan.experiments[key], plan.experiments.get("suite.fair") or {}
    for method, other in (exp.get("fair_methods") or {}).items():
        if method not in exp["methods"]:
            raise ConfigError(
                f"{where}.fair_methods: {method!r} is not a method of {key}{did_you_mean(method, exp['methods'])}"
            )
        if other is not None and other not in fair.get("methods", []):
            raise ConfigError(
                f"{where}.fair_methods.{method}: {other!r} is not a method of suite.fair"
                f"{did_you_mean(str(other), fair.get('methods', []))}; null where suite.fair has none"
            )


def check_paper_numbers(plan, key: str, where: str) -> None:
    """Every method has an entry; each names an experiment and a row of it (a method or a quoted
    row) with a Recall@1 on a dataset of this experiment, or says why there is none."""
    exp = plan.experiments[key]
    numbers = exp.get("paper_numbers") or {}
    stray = sorted(set(numbers) - set(exp["methods"]))
    if stray:
        raise ConfigError(f"{where}.paper_numbers: {stray} are not among the experiment's methods")
    for method in exp["methods"]:
        entry = numbers.get(method)
        at = f"{where}.paper_numbers.{method}"
        if not isinstance(entry, dict) or not entry:
            raise ConfigError(
                f"{at}: missing; name the experiment and row whose Recall@1 the paper prints "
                f"for it ({{<experiment>: <row>}}), or {{none: <why the papers print none>}}"
            )
        if "none" in entry:
            if set(entry) != {"none"} or not isinstance(entry["none"], str) or not entry["none"].strip():
                raise ConfigError(f"{at}: `none` stands alone, with the reason as text")
            continue
        for source, row in entry.items():
            if source not in plan.experiments:
                raise ConfigError(f"{at}: unknown experiment {source!r}")
            if not any(
                "recall@1" in (values or {}) and dataset in exp["datasets"]
                for dataset, values in _row(plan.experiments[source], row).items()
            ):
                raise ConfigError(
                    f"{at}: experiment {source} has no Recall@1 of row {row!r} on "
                    f"{', '.join(exp['datasets'])} (its reported and quoted rows name it)"
                )


def check_omitted(plan, key: str, where: str) -> None:
    """`omitted`: {method of the catalogue, not of the experiment: why it is left out}."""
    exp = plan.experiments[key]
    for method, reason in (exp.get("omitted") or {}).items():
        plan.method_of(method, f"{where}.omitted")
        if method in exp["methods"]:
            raise ConfigError(f"{where}.omitted: {method} is among the experiment's methods")
        if not isinstance(reason, str) or not reason.strip():
            raise ConfigError(f"{where}.omitted.{method}: say why it is left out (a text)")


def _row(exp: dict, row: str) -> dict:
    """dataset → metrics of a reported method or a quoted row of a paper experiment."""
    return (exp.get("reported") or {}).get(row) or (exp.get("quoted") or {}).get(row) or {}


def paper_recall_at_1(plan, key: str, datasets: list[str]) -> dict:
    """method → dataset → (the paper's Recall@1 as it prints it, the experiment that prints it),
    from `paper_numbers` (the first listed experiment with the dataset wins)."""
    out: dict = {}
    for method, entry in (plan.experiments[key].get("paper_numbers") or {}).items():
        for source, row in ({} if "none" in entry else entry).items():
            for dataset, values in _row(plan.experiments[source], row).items():
                if dataset in datasets and "recall@1" in values:
                    out.setdefault(method, {}).setdefault(dataset, [printed(values["recall@1"]), source])
    return out


def no_paper_number(plan, key: str) -> dict:
    """method → why the papers print no number for it."""
    return {m: e["none"] for m, e in (plan.experiments[key].get("paper_numbers") or {}).items() if "none" in e}
