"""The knob catalogue (`workflow/config/knobs.yaml`), checked against the typed settings: every
training setting belongs to exactly one knob, to `not_numbers` or to `method_settings`."""

from __future__ import annotations

from dataclasses import dataclass

from dmlbench import run_config
from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import did_you_mean

PROTOCOLS = ("selection", "folds", "evaluation")  # what a knob may add beyond settings


@dataclass(frozen=True)
class KnobSpec:
    """One knob: its name, label, the settings it moves together, and the protocol part it adds."""

    name: str
    label: str
    settings: tuple[str, ...]
    protocol: str | None = None
    needs: tuple[str, ...] = ()  # knobs moved with it on the one-at-a-time path


@dataclass(frozen=True)
class Catalogue:
    knobs: tuple[KnobSpec, ...]  # in the order of the cumulative path
    headline: dict  # paper → its headline method's id in suite.fair
    baseline: str
    not_numbers: tuple[str, ...]
    method_settings: tuple[str, ...]

    def knob_of(self, setting: str) -> KnobSpec | None:
        return next((k for k in self.knobs if setting in k.settings), None)


def parse(data: dict, where: str) -> Catalogue:
    """Check the knob file's mapping (read by `dmlbench.config.loading.load_yaml`): known keys,
    every setting a real one and placed once."""
    unknown = set(data) - {"headline", "baseline", "knobs", "not_numbers", "method_settings"}
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {sorted(unknown)}; known: headline, baseline, knobs, not_numbers, method_settings"
        )
    knobs = []
    for name, entry in (data.get("knobs") or {}).items():
        if (
            not isinstance(entry, dict)
            or set(entry) - {"label", "settings", "protocol", "needs"}
            or "label" not in entry
        ):
            raise ConfigError(
                f"{where}: knob {name}: give {{label, settings: [...], protocol and needs: [...] (optional)}}"
            )
        protocol = entry.get("protocol")
        if protocol is not None and protocol not in PROTOCOLS:
            raise ConfigError(f"{where}: knob {name}: protocol {protocol!r} is not one of {', '.join(PROTOCOLS)}")
        settings = entry.get("settings") or []
        if not isinstance(settings, list):
            raise ConfigError(f"{where}: knob {name}: settings must be a list of setting keys, not {settings!r}")
        needs = entry.get("needs") or []
        earlier = [k.name for k in knobs]
        if not isinstance(needs, list) or any(n not in earlier for n in needs):
            raise ConfigError(
                f"{where}: knob {name}: needs {needs!r}: a list of knobs listed before it "
                f"({', '.join(earlier) or 'none'})"
            )
        knobs.append(KnobSpec(name, entry["label"], tuple(settings), protocol, tuple(needs)))
    catalogue = Catalogue(
        tuple(knobs),
        dict(data.get("headline") or {}),
        data.get("baseline"),
        tuple(data.get("not_numbers") or ()),
        tuple(data.get("method_settings") or ()),
    )
    _check_placement(catalogue, where)
    return catalogue


def _check_placement(catalogue: Catalogue, where: str) -> None:
    known = [key for key, *_ in run_config.documented()]
    placed: dict[str, str] = {}
    groups = [(f"knob {k.name}", k.settings) for k in catalogue.knobs]
    groups += [("not_numbers", catalogue.not_numbers), ("method_settings", catalogue.method_settings)]
    for group, settings in groups:
        for setting in settings:
            if setting not in known:
                raise ConfigError(
                    f"{where}: {group}: {setting!r} is no training setting{did_you_mean(setting, known)}"
                    f" (docs/generated/settings.md)"
                )
            if setting in placed:
                raise ConfigError(f"{where}: {setting} is in {placed[setting]} and in {group}: place it once")
            placed[setting] = group
    missing = [key for key in known if key not in placed]
    if missing:
        raise ConfigError(
            f"{where}: setting(s) {', '.join(missing)} belong to no knob: add each to the knob it "
            f"moves, to not_numbers or to method_settings"
        )
