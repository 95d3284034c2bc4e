"""The building blocks of the typed settings: a setting with its rules and documentation, a
nested section, and a typed section made from a mapping."""

from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import field

from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import did_you_mean


def setting(default, doc: str, **rules):
    """A field with its default, its documentation and its JSON-schema rules (`minimum`,
    `exclusiveMinimum`, `maximum`, `exclusiveMaximum`, `enum`, `pattern`, `minItems`, `maxItems`,
    `items`: rules of a list's items, `minLength`)."""
    metadata = {"doc": doc, "rules": rules}
    if isinstance(default, (list, tuple)):
        return field(default_factory=lambda: tuple(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def section(kind: type, doc: str):
    """A field holding a nested section, built from its own defaults."""
    return field(default_factory=kind, metadata={"doc": doc, "rules": {}})


def from_mapping(kind: type, values: dict, where: str):
    """`kind` from a mapping, nested sections included; a missing key takes its default, an unknown
    one is refused (with the closest known name)."""
    hints = annotations_of(kind)
    out = {}
    for key, value in (values or {}).items():
        if key not in hints:
            raise ConfigError(f"{where}: unknown setting {key!r}{did_you_mean(key, hints)}")
        hint = hints[key]
        if dataclasses.is_dataclass(hint):
            out[key] = from_mapping(hint, value, f"{where}.{key}")
        elif isinstance(value, list):
            out[key] = tuple(value)
        else:
            out[key] = value
    return kind(**out)


@functools.cache
def annotations_of(kind: type) -> dict:
    """Field name → its annotation, evaluated (once per class)."""
    return typing.get_type_hints(kind)


def plain(value):
    """Tuples as lists, recursively: the JSON form of a settings mapping."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
