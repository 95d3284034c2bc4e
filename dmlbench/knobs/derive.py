"""The knobs in which two resolved recipes differ, each with its two values, in the catalogue's order."""

from __future__ import annotations

from dataclasses import dataclass, field

from dmlbench import run_config
from dmlbench.core.errors import ConfigError
from dmlbench.knobs.catalogue import Catalogue


@dataclass(frozen=True)
class Knob:
    """A knob two recipes differ in: each moved setting's value under each (`protocol`: the
    protocol part the knob adds, as text, where the two differ there)."""

    name: str
    label: str
    paper: dict = field(default_factory=dict)
    fair: dict = field(default_factory=dict)

    @property
    def settings(self) -> list[str]:
        return [key for key in self.paper if key != "protocol"]


def setting_values(resolved: dict) -> dict:
    """Dotted key → value of every training setting of a resolved config (lists as tuples)."""
    out = {}
    for key, *_ in run_config.documented():
        value = resolved
        for part in key.split("."):
            value = value[part]
        out[key] = tuple(value) if isinstance(value, list) else value
    return out


def derive(
    paper: dict, fair: dict, catalogue: Catalogue, where: str, protocol: dict[str, tuple[str, str]] | None = None
) -> list[Knob]:
    """The knobs of `catalogue` in which the resolved configs `paper` and `fair` differ.
    `protocol`: per protocol part (`selection`, `folds`, `evaluation`) its (paper, fair) text. A
    differing setting that is no knob's (nor `not_numbers` nor `method_settings`) is refused."""
    a, b = setting_values(paper), setting_values(fair)
    ignored = set(catalogue.not_numbers) | set(catalogue.method_settings)
    moved: dict[str, dict] = {}
    for key in a:
        if a[key] == b[key] or key in ignored:
            continue
        knob = catalogue.knob_of(key)
        if knob is None:
            raise ConfigError(
                f"{where}: setting {key} differs ({a[key]!r} in the paper's recipe, {b[key]!r} in the "
                f"fair one) and belongs to no knob: add it to a knob of knobs.yaml"
            )
        moved.setdefault(knob.name, {})[key] = (a[key], b[key])
    knobs = []
    for spec in catalogue.knobs:
        values = dict(moved.get(spec.name, {}))
        texts = (protocol or {}).get(spec.protocol) if spec.protocol else None
        if texts and texts[0] != texts[1]:
            values["protocol"] = texts
        if values:
            knobs.append(
                Knob(spec.name, spec.label, {k: v[0] for k, v in values.items()}, {k: v[1] for k, v in values.items()})
            )
    return knobs
