"""Reading the catalogue's YAML files and merging settings."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import yaml

from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import did_you_mean


class PaperNumber(float):
    """A decimal number of the catalogue that remembers the digits its YAML text gives: the
    papers print 80.70 and 85.8 side by side, and the report prints each as written."""

    def __new__(cls, text: str):
        number = super().__new__(cls, text)
        number.text = text
        return number


# libyaml's parser where PyYAML has it (the same documents, several times faster: the plan reads the
# whole catalogue on every Snakemake start)
class _SafeLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """Safe YAML that refuses a key given twice in one mapping (YAML's own rule; PyYAML keeps the
    last one silently), naming the key and both lines."""


def _unique_mapping(loader, node: yaml.MappingNode):
    data: dict = {}
    yield data
    seen: dict = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor`: merged by construct_mapping
            continue
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping",
                node.start_mark,
                f"found the key {key!r} twice (first on line {seen[key]}): keep one",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line + 1
    data.update(loader.construct_mapping(node, deep=True))


_SafeLoader.add_constructor("tag:yaml.org,2002:map", _unique_mapping)


class _DigitsLoader(_SafeLoader):
    """Safe YAML whose plain decimal numbers (no exponent) are `PaperNumber`s."""


def _decimal(loader: _DigitsLoader, node: yaml.ScalarNode) -> float:
    text = loader.construct_scalar(node)
    if re.fullmatch(r"[-+]?\d+\.\d+", text):
        return PaperNumber(text)
    return loader.construct_yaml_float(node)


_DigitsLoader.add_constructor("tag:yaml.org,2002:float", _decimal)


def printed(value) -> str:
    """A paper's number with the digits the catalogue gives it (its text where it was read from
    YAML or sent as text, else the shortest form of the float: 97.0, 66.85)."""
    if isinstance(value, str):
        return value
    return getattr(value, "text", None) or repr(float(value))


def plain_numbers(tree):
    """The same tree with every `PaperNumber` a plain float: settings that reach training (and its
    checkpoints, which load only built-in types) never carry the catalogue's digits."""
    if isinstance(tree, dict):
        return {key: plain_numbers(value) for key, value in tree.items()}
    if isinstance(tree, list):
        return [plain_numbers(value) for value in tree]
    return float(tree) if isinstance(tree, PaperNumber) else tree


def printed_numbers(tree):
    """A nested mapping of paper numbers with every number as its printed text (JSON keeps it)."""
    if isinstance(tree, dict):
        return {key: printed_numbers(value) for key, value in tree.items()}
    return printed(tree)


def load_yaml(path: Path, keep_digits: bool = False) -> dict:
    """A YAML mapping; with `keep_digits` (the experiment catalogue), decimal numbers keep their
    written digits (`PaperNumber`)."""
    try:
        data = yaml.load(path.read_text(), Loader=_DigitsLoader if keep_digits else _SafeLoader)
    except yaml.YAMLError as error:
        raise ConfigError(f"{path} is not valid YAML: {error}") from None
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path} is not UTF-8 text ({error.reason} at byte {error.start})") from None
    if data is not None and not isinstance(data, dict):
        raise ConfigError(
            f"{path} must hold a mapping of keys to values (key: value lines), not a {type(data).__name__}"
        )
    if expanded_size(data) > MAX_VALUES:
        raise ConfigError(
            f"{path} expands to more than {MAX_VALUES:,} values through its aliases (*name): "
            f"refused before it fills the memory (an alias bomb?); write the values out"
        )
    return data or {}


MAX_VALUES = 1_000_000  # values of a YAML file with its aliases expanded (the catalogue: ~20,000)


def expanded_size(tree, sizes: dict | None = None) -> int:
    """How many values `tree` holds once every alias is copied out (what `plain_copy` makes), in
    time linear in the file: a subtree shared through aliases is counted once per use, walked once."""
    sizes = {} if sizes is None else sizes
    if not isinstance(tree, (dict, list)):
        return 1
    if id(tree) not in sizes:
        items = tree.values() if isinstance(tree, dict) else tree
        sizes[id(tree)] = 1 + sum(expanded_size(item, sizes) for item in items)
    return sizes[id(tree)]


def merge_layers(*layers: dict | None) -> dict:
    """`deep_merge` of the layers in turn (later keys win, mappings merge), copied once at the end."""
    out: dict = {}
    for layer in layers:
        if layer:
            out = _merge_references(out, layer)
    return plain_copy(out)


def plain_copy(value):
    """A copy of settings read from YAML or JSON (mappings and lists copied, other values shared:
    they are immutable); `copy.deepcopy`'s result several times faster (the plan makes thousands)."""
    if isinstance(value, dict):
        return {key: plain_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain_copy(item) for item in value]
    return value


def _merge_references(base: dict, update: dict) -> dict:
    out = dict(base)
    for key, value in update.items():
        out[key] = (
            _merge_references(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def deep_merge(base: dict, update: dict) -> dict:
    out = plain_copy(base)
    for key, value in (update or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = plain_copy(value)
    return out


def with_settings(preset_schema: dict, settings_schema: dict) -> dict:
    """The preset schema with `overrides`, `per_dataset.*` and `subset.*.train` typed as training
    settings (used to convert command-line text, not to name unknown keys: `check_keys` does that)."""
    schema = copy.deepcopy(preset_schema)
    partial = {k: v for k, v in settings_schema.items() if k not in ("$schema", "$defs")}
    schema["$defs"] = settings_schema.get("$defs", {})
    schema["properties"]["overrides"] = partial
    schema["properties"]["per_dataset"]["additionalProperties"] = partial
    schema["properties"]["subset"]["additionalProperties"]["properties"]["train"] = partial
    return schema


def with_dataset_names(schema: dict, names: list[str]) -> dict:
    """The preset schema with the registered dataset names where it takes a dataset: the
    `datasets` list and the keys of `data.paths` and `per_dataset`."""
    schema = copy.deepcopy(schema)
    one_of = {"enum": names}
    properties = schema["properties"]
    properties["data"]["properties"]["paths"]["propertyNames"] = one_of
    properties["datasets"]["oneOf"][1]["items"] = one_of
    properties["per_dataset"]["propertyNames"] = one_of
    return schema


def check_keys(update: dict, reference: dict, where: str) -> None:
    """Every key of `update` must exist in `reference` (recursively); name the first that does not."""
    for key, value in (update or {}).items():
        if key not in reference:
            raise ConfigError(
                f"{where}: unknown setting {key!r}{did_you_mean(key, reference)}; known: {', '.join(reference)}"
            )
        if isinstance(value, dict) and isinstance(reference[key], dict):
            check_keys(value, reference[key], f"{where}.{key}")


SUBSET_KEYS = ("methods", "variants", "knobs")  # a preset chooses these per experiment, in `subset`


def schema_hint(error) -> str:
    """What to do about a preset's schema error, where the suite knows a likely intent: a top-level
    `methods=[…]` (or variants, knobs) means an experiment's, chosen in `subset`."""
    from dmlbench.core.registry import did_you_mean

    unexpected = [key for key in SUBSET_KEYS if f"'{key}'" in error.message]
    if error.validator == "additionalProperties" and not list(error.absolute_path) and unexpected:
        return (
            f"; an experiment's {unexpected[0]} are chosen per experiment: "
            f"'subset={{<experiment>: {{{unexpected[0]}: [...]}}}}' (docs/presets.md)"
        )
    if error.validator == "additionalProperties":  # a misspelt key: the closest known one
        known = list((error.schema or {}).get("properties") or {})
        extra = [key for key in error.instance if key not in known] if isinstance(error.instance, dict) else []
        return did_you_mean(extra[0], known) if extra else ""
    if error.validator == "enum":
        return did_you_mean(error.instance, error.validator_value)
    return ""
