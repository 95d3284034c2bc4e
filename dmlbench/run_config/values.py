"""Values of settings: command-line text turned into the types the schemas expect, and checks of
every training setting's type and range (`dmlbench.run_config.json_schema`).

Snakemake 9 hands nested `--config` values over as text (`seeds=[0,1,2]` arrives as
`['0', '1', '2']`, `data={cache: null}` as `{'cache': 'null'}`); `coerce` converts text wherever
the schema expects a number, a boolean or null, and leaves it alone where text is expected.
"""

from __future__ import annotations

import json
import math
import re

import jsonschema

from dmlbench.core.errors import ConfigError
from dmlbench.run_config.resolved import RunConfig

_NULL = {"null", "none", "~"}
_BOOLEAN = {"true": True, "false": False}


def from_text(text: str):
    """`'3'` → 3, `'1e-5'` → 1e-05, `'false'` → False, `'null'` → None; anything else unchanged."""
    lowered = text.strip().lower()
    if lowered in _NULL:
        return None
    if lowered in _BOOLEAN:
        return _BOOLEAN[lowered]
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    return text


def _resolve(schema: dict, root: dict) -> dict:
    while "$ref" in schema:
        node = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def _accepts(value, schema: dict, root: dict) -> bool:
    validator = jsonschema.Draft202012Validator(dict(_resolve(schema, root), **{"$defs": root.get("$defs", {})}))
    return validator.is_valid(value)


def _expects_text(schema: dict) -> bool:
    types = schema.get("type")
    types = [types] if isinstance(types, str) else (types or [])
    if "enum" in schema:
        return all(isinstance(v, str) for v in schema["enum"] if v is not None)
    if "const" in schema:
        return isinstance(schema["const"], str)
    return not types or "string" in types


def coerce(value, schema: dict, root: dict | None = None):
    """`value` with text converted where `schema` expects another type (recursively)."""
    root = root if root is not None else schema
    schema = _resolve(schema, root)
    for key in ("oneOf", "anyOf"):
        if key in schema:
            candidates = [(coerce(value, option, root), option) for option in schema[key]]
            for candidate, option in candidates:
                if _accepts(candidate, option, root):
                    return candidate
            # none fits: the first conversion, so that validation names the value's range, not its type
            return next((c for c, _ in candidates if c != value), value)
    if isinstance(value, str):
        if _expects_text(schema):
            return value
        return from_text(value)
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        extra = schema.get("additionalProperties")
        out = {}
        for key, item in value.items():
            sub = properties.get(key)
            if sub is None:
                sub = next((s for pattern, s in patterns.items() if re.search(pattern, str(key))), None)
            if sub is None and isinstance(extra, dict):
                sub = extra
            out[key] = coerce(item, sub, root) if sub is not None else item
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [coerce(item, schema["items"], root) for item in value]
    return value


def _non_finite(value, path: str = "") -> str | None:
    """The key of the first NaN or infinite number in `value` (ranges never reject NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "(top level)"
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _non_finite(item, f"{path}.{key}" if path else str(key))
        if found:
            return found
    return None


def check(settings: dict, schema: dict, where: str) -> None:
    """Stop at the first setting whose value is not finite, not of its type or outside its range,
    naming it."""
    bad = _non_finite(settings or {})
    if bad is not None:
        value = bad.split(".")
        raise ConfigError(
            f"{where}: setting {bad}: {_lookup(settings, value)!r} is not a finite number; give a finite value"
        )
    validator = jsonschema.Draft202012Validator(schema)
    if not isinstance(settings, dict) or schema.get("required"):
        _first_error(validator, settings or {}, where)
        return
    valid = _VALID_SECTIONS.setdefault(id(schema), (schema, set()))[1]  # the schema kept: its id stays its
    for key in sorted(settings):  # section by section: the plan's runs share most sections
        known = (key, json.dumps(settings[key], sort_keys=True, default=str))
        if known not in valid:
            _first_error(validator, {key: settings[key]}, where)
            valid.add(known)


_VALID_SECTIONS: dict[int, tuple[dict, set]] = {}  # per schema: (top-level key, value) found valid


def _first_error(validator, settings, where: str) -> None:
    error = next(iter(sorted(validator.iter_errors(settings), key=lambda e: list(e.absolute_path))), None)
    if error is not None:
        key = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ConfigError(f"{where}: setting {key}: {error.message}")


def _lookup(settings, keys: list[str]):
    for key in keys:
        settings = settings[int(key)] if isinstance(settings, list) else settings[key]
    return settings


def check_tracking_uri(uri: str | None, where: str) -> None:
    """A tracking URI holds no credentials: it is written to config.json, model.pt and the log."""
    from urllib.parse import urlsplit

    if uri and (urlsplit(uri).username or urlsplit(uri).password):
        raise ConfigError(
            f"{where}: tracking.mlflow holds credentials (user or password before '@'), which would "
            f"be stored in config.json, model.pt and the log: give the URI without them and set "
            f"MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN) in the "
            f"environment instead"
        )


def check_run(cfg: RunConfig, where: str) -> None:
    """Checks that involve several settings of one resolved run."""
    check_tracking_uri(cfg.tracking.mlflow, where)
    size, per_class = cfg.batch.size, cfg.batch.per_class
    if cfg.method.sampler == "m_per_class" and size % per_class:
        raise ConfigError(f"{where}: batch.size {size} is not a multiple of batch.per_class {per_class}")
    scheme = cfg.scheme
    if scheme.name == "profs" and scheme.representatives == "images" and per_class < 2:
        raise ConfigError(
            f"{where}: scheme profs puts a representative and batch.per_class − 1 "
            f"positives of its class in a batch: batch.per_class must be ≥ 2, not {per_class}"
        )
    image = cfg.input
    if image.crop > image.resize + 2 * image.padding:
        raise ConfigError(
            f"{where}: input.crop {image.crop} is larger than input.resize "
            f"{image.resize} (+ 2 × padding {image.padding})"
        )
    epochs = cfg.epochs
    for key, listed in (
        ("record.scatter_epochs", cfg.record.scatter_epochs),
        ("record.probe.epochs", cfg.record.probe.epochs),
    ):
        late = [e for e in listed if e > epochs]
        if late:
            raise ConfigError(f"{where}: {key} {late} lie after the last epoch ({epochs})")
    if cfg.early_stopping.patience and cfg.eval.every != 1:
        raise ConfigError(
            f"{where}: early_stopping.patience needs an evaluation after every epoch "
            f"(eval.every: 1, now {cfg.eval.every})"
        )
