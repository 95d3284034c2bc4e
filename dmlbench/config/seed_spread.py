"""The seed spread σ the power computations assume, per dataset × metric (`workflow/config/seed_spread.yaml`,
docs/verdicts.md, "Power"): a prior with its source, checked by value when the catalogue loads; once a
preset has finished runs, the pooled within-run spread of their seeds instead (`spread_of`)."""

from __future__ import annotations

import functools
import json
import math
import re
from collections import defaultdict
from pathlib import Path

from dmlbench.config.loading import load_yaml
from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import did_you_mean
from dmlbench.data.datasets import DATASETS

SPREAD_FILE = "seed_spread.yaml"
SD_RANGE = (0.01, 10.0)  # points: a seed spread outside it is a typo (a fraction, a variance, a mean)
METRIC = re.compile(r"((small|medium|large)_)?recall@\d+|nmi|f1|map@r|r_precision|p@1")


@functools.lru_cache(maxsize=4)
def catalogue(config_dir: Path) -> dict:
    """{default: {sd, source}, spreads: {dataset: {metric: {sd, source}}}}, checked by value."""
    path = Path(config_dir) / SPREAD_FILE
    found = load_yaml(path)
    if set(found) != {"default", "spreads"} or not isinstance(found["spreads"], dict):
        raise ConfigError(
            f"{path}: two keys, `default:` (sd, source) and `spreads:` (dataset: metric: sd, source), "
            f"not {sorted(found)}"
        )
    _check(found["default"], f"{path}: default")
    for dataset, metrics in found["spreads"].items():
        if dataset not in DATASETS.names():
            raise ConfigError(
                f"{path}: spreads.{dataset}: no dataset of the catalogue"
                f"{did_you_mean(str(dataset), DATASETS.names())}; known: {', '.join(DATASETS.names())}"
            )
        if not isinstance(metrics, dict) or not metrics:
            raise ConfigError(f"{path}: spreads.{dataset}: a mapping of metric: {{sd, source}}, not {metrics!r}")
        for metric, entry in metrics.items():
            if not METRIC.fullmatch(str(metric)):
                raise ConfigError(
                    f"{path}: spreads.{dataset}.{metric}: no metric the suite measures (recall@K, small/medium/"
                    f"large_recall@K, nmi, f1, map@r, r_precision, p@1): name it as an experiment's table does"
                )
            _check(entry, f"{path}: spreads.{dataset}.{metric}")
    return found


def _check(entry, where: str) -> None:
    if not isinstance(entry, dict) or set(entry) != {"sd", "source"}:
        raise ConfigError(
            f"{where}: a mapping with `sd` (points per seed) and `source` (where it was read), not {entry!r}"
        )
    sd = entry["sd"]
    low, high = SD_RANGE
    if isinstance(sd, bool) or not isinstance(sd, (int, float)) or not (math.isfinite(sd) and low <= sd <= high):
        raise ConfigError(
            f"{where}.sd: a standard deviation over seeds in points of a metric in % ({low}-{high}), not {sd!r} "
            f"(a fraction is written ×100, a variance as its square root)"
        )
    if not isinstance(entry["source"], str) or not entry["source"].strip():
        raise ConfigError(
            f"{where}.source: say where the spread was read (paper or repository, table, row), not {entry['source']!r}"
        )


def prior(config_dir: Path, dataset: str, metric: str) -> tuple[float, str]:
    """(σ, its source): the entry of `dataset` × `metric`, else the largest of the dataset's
    entries (derived), else the default."""
    found = catalogue(Path(config_dir))
    own = found["spreads"].get(dataset) or {}
    if metric in own:
        return float(own[metric]["sd"]), own[metric]["source"]
    if own:
        largest = max(own, key=lambda m: own[m]["sd"])
        return float(
            own[largest]["sd"]
        ), f"derived: the largest published spread of {dataset} ({largest}: {own[largest]['source']})"
    return float(found["default"]["sd"]), found["default"]["source"]


def pooled(results: Path) -> dict[tuple[str, str], tuple[float, int]]:
    """(dataset, metric) → (pooled σ in points, finished runs it pools) over the runs under
    `results` (results/<preset>) with ≥ 2 finished seeds of one run's settings (experiment,
    dataset, method): the square root of Σ(nᵢ − 1)sᵢ² / Σ(nᵢ − 1) over those runs."""
    per_run: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(Path(results).glob("*/*/*/seed*/metrics.json")):
        experiment, dataset, method = path.relative_to(results).parts[:3]
        for metric, value in (json.loads(path.read_text()).get("metrics") or {}).items():
            if isinstance(value, (int, float)) and math.isfinite(value):
                per_run[(experiment, dataset, method)][metric].append(100.0 * value)
    sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0, 0])
    for (_, dataset, _), metrics in per_run.items():
        for metric, values in metrics.items():
            if len(values) >= 2:
                mean = sum(values) / len(values)
                total = sums[dataset, metric]
                total[0] += sum((v - mean) ** 2 for v in values)
                total[1] += len(values) - 1
                total[2] += len(values)
    return {key: (math.sqrt(ss / df), runs) for key, (ss, df, runs) in sums.items() if ss > 0}


def spread_of(config_dir: Path, results: Path | None = None):
    """(dataset, metric) → (σ, what it is: "spread: pooled from N finished runs" or "prior: <source>")."""
    measured = pooled(results) if results is not None and Path(results).is_dir() else {}

    def of(dataset: str, metric: str) -> tuple[float, str]:
        if (dataset, metric) in measured:
            sd, runs = measured[dataset, metric]
            return sd, f"spread: pooled from {runs} finished runs"
        sd, source = prior(config_dir, dataset, metric)
        return sd, f"prior: {source}"

    return of
