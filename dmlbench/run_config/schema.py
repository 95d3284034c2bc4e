"""What the typed settings generate: the defaults, the JSON schema and the documentation rows."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from dmlbench.run_config.fields import annotations_of, plain
from dmlbench.run_config.sections import TrainingSettings


def defaults() -> dict:
    """Every training setting at its default, as a plain mapping (the first layer of every run)."""
    return plain(dataclasses.asdict(TrainingSettings()))


_JSON_TYPES = {int: "integer", float: "number", bool: "boolean", str: "string", type(None): "null"}


def _json_type(hint) -> dict:
    """The JSON-schema type of an annotation: a scalar, an optional scalar, or a tuple of scalars."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return {"type": [_JSON_TYPES[arg] for arg in typing.get_args(hint)]}
    if origin is tuple:
        return {"type": "array", "items": {"type": _JSON_TYPES[typing.get_args(hint)[0]]}}
    return {"type": _JSON_TYPES[hint]}


def _section_schema(kind: type) -> dict:
    hints = annotations_of(kind)
    properties = {}
    for item in dataclasses.fields(kind):
        hint = hints[item.name]
        if dataclasses.is_dataclass(hint):
            properties[item.name] = _section_schema(hint)
            continue
        rules = dict(item.metadata["rules"])
        node = {} if "enum" in rules else _json_type(hint)
        if "items" in rules:
            node["items"] = {**node.get("items", {}), **rules.pop("items")}
        properties[item.name] = {**node, **rules}
    return {"type": "object", "additionalProperties": False, "properties": properties}


def json_schema(optimisers: list[str]) -> dict:
    """The JSON schema of every training setting (types and ranges from the fields above), with
    `optimisers` (the registered names, `dmlbench.training.optimisers`) as `optimizer.name`'s values."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **_section_schema(TrainingSettings)}
    schema["properties"]["optimizer"]["properties"]["name"] = {"enum": list(optimisers)}
    return schema


_BOUNDS = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤", "exclusiveMaximum": "<"}


def documented() -> list[tuple[str, str, Any, str]]:
    """(dotted key, JSON type or allowed values, default, meaning) of every setting, in order."""
    rows = []

    def walk(kind: type, prefix: str) -> None:
        hints = annotations_of(kind)
        for item in dataclasses.fields(kind):
            hint = hints[item.name]
            if dataclasses.is_dataclass(hint):
                walk(hint, f"{prefix}{item.name}.")
                continue
            rules = item.metadata["rules"]
            if "enum" in rules:
                kind_text = " | ".join(rules["enum"])
            else:
                names = _json_type(hint)["type"]
                kind_text = " or ".join(names if isinstance(names, list) else [names])
                bounds = [f"{sign} {rules[key]}" for key, sign in _BOUNDS.items() if key in rules]
                kind_text += f" ({', '.join(bounds)})" if bounds else ""
            default = item.default if item.default is not dataclasses.MISSING else plain(item.default_factory())
            rows.append((prefix + item.name, kind_text, default, item.metadata["doc"]))

    walk(TrainingSettings, "")
    return rows
