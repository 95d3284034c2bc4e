"""The equivalence margins of the verdicts on the papers' numbers (`workflow/config/margins.yaml`,
docs/verdicts.md): a default band with its source, which an experiment's own `margin:` (a band,
or one per metric of its table, and its source) overrides. Checked when the catalogue loads."""

from __future__ import annotations

import functools
import math
from pathlib import Path

from dmlbench.config.loading import load_yaml
from dmlbench.core.errors import ConfigError

MARGINS_FILE = "margins.yaml"
KEYS = {"band", "source"}


@functools.lru_cache(maxsize=4)
def default(config_dir: Path) -> dict:
    """The default margin, checked: {band: points, source: text}."""
    path = Path(config_dir) / MARGINS_FILE
    margins = load_yaml(path)
    if not isinstance(margins, dict) or set(margins) != {"default"}:
        raise ConfigError(f"{path}: one key, `default:` (band, source); an experiment's own margin is its `margin:`")
    _check(margins["default"], [], f"{path}: default")
    if isinstance(margins["default"]["band"], dict):
        raise ConfigError(f"{path}: default.band: one number of points (per-metric bands belong to an experiment)")
    return margins["default"]


def check_experiment(exp: dict, where: str) -> None:
    """An experiment's `margin:`, when it has one: a band (one number or one per metric of its
    table, finite points ≥ 0) and a source."""
    if exp.get("margin") is not None:
        _check(exp["margin"], (exp.get("table") or {}).get("metrics") or [], f"{where}.margin")


def of(config_dir: Path, exp: dict) -> dict:
    """{band: {metric: points} for every metric of the table, source: text}: what the verdicts use."""
    own = exp.get("margin") or default(config_dir)
    fallback = default(config_dir)["band"]
    band = own["band"]
    metrics = (exp.get("table") or {}).get("metrics") or []
    per_metric = {m: float(band.get(m, fallback) if isinstance(band, dict) else band) for m in metrics}
    return {
        "band": per_metric,
        "default": float(band if not isinstance(band, dict) else fallback),
        "source": own["source"],
    }


def _check(margin, metrics: list[str], where: str) -> None:
    if not isinstance(margin, dict) or set(margin) != KEYS:
        raise ConfigError(
            f"{where}: a mapping with `band` (points) and `source` (why this margin: a seed spread "
            f"the paper or the reality check reports, a printed precision), not {margin!r}"
        )
    if not isinstance(margin["source"], str) or not margin["source"].strip():
        raise ConfigError(f"{where}.source: say where the band comes from (text), not {margin['source']!r}")
    bands = margin["band"] if isinstance(margin["band"], dict) else {"": margin["band"]}
    for metric, value in bands.items():
        if metric and metric not in metrics:
            raise ConfigError(f"{where}.band: {metric!r} is not in the table's metrics ({', '.join(metrics)})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
            raise ConfigError(
                f"{where}.band{'.' + metric if metric else ''}: a finite number of points ≥ 0 "
                f"(or one per metric), not {value!r}"
            )
