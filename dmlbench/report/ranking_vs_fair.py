"""Does the methods' ranking on today's trunks agree with the fair table's on the papers' trunk?
Per dataset and trunk of a trunk-ranked experiment (`suite.modern`), Kendall's τ-b between its
methods' mean Recall@1 and `suite.fair`'s concatenated Recall@1 of the same methods (BN-Inception,
the reality check's protocol), over the methods both ran:

- τ-b and its two-sided p-value (`scipy.stats.kendalltau`);
- a 95 % percentile bootstrap interval for τ over the seeds: each method's seeds (and each fair
  method's repetitions) drawn again with replacement, the means and τ recomputed;
- what N methods can show: the smallest p any τ reaches at this N (τ = ±1), the smallest |τ|
  significant at 0.05, and the bootstrap power, the share of the resamples whose τ is significant
  at 0.05 (the chance that another draw of seeds would call the agreement seen here significant)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from dmlbench.core.io import atomic_path, read_json

ALPHA = 0.05
DRAWS = 2000
METRIC = "recall@1"
COLUMNS = [
    "dataset",
    "trunk",
    "methods",
    "tau",
    "p_value",
    "tau_low",
    "tau_high",
    "smallest_p",
    "critical_tau",
    "power",
    "note",
]


def smallest_p(n: int) -> float:
    """The two-sided p of τ = 1 over n methods (no ties), the least any ranking of n can reach."""
    return float(stats.kendalltau(np.arange(n), np.arange(n)).pvalue) if n >= 2 else math.nan


def critical_tau(n: int) -> float:
    """The smallest |τ| whose two-sided p is below `ALPHA` over n methods (NaN: none is)."""
    if n < 2:
        return math.nan
    pairs = n * (n - 1) // 2
    for discordant in range(pairs // 2, -1, -1):
        tau = 1 - 2 * discordant / pairs
        if tau > 0 and stats.kendalltau(_ranking_with(n, discordant), np.arange(n)).pvalue < ALPHA:
            return tau
    return math.nan


def _ranking_with(n: int, discordant: int) -> np.ndarray:
    """A permutation of 0..n-1 with exactly `discordant` inversions: adjacent swaps, bubble-sort
    passes towards the reversed order, each adding one."""
    order, done = list(range(n)), 0
    for last in range(n - 1, 0, -1):
        for j in range(last):
            if done == discordant:
                return np.array(order)
            order[j], order[j + 1] = order[j + 1], order[j]
            done += 1
    return np.array(order)


def compare(ours: dict[str, list[float]], fair: dict[str, list[float]], rng: np.random.Generator) -> dict:
    """`ours`, `fair`: method → its values over seeds (repetitions). τ, p, bootstrap interval, power."""
    methods = sorted(set(ours) & set(fair))
    row = {"methods": len(methods), "smallest_p": smallest_p(len(methods)), "critical_tau": critical_tau(len(methods))}
    if len(methods) < 2:
        return {
            **row,
            "tau": math.nan,
            "p_value": math.nan,
            "tau_low": math.nan,
            "tau_high": math.nan,
            "power": math.nan,
            "note": "fewer than two methods in both",
        }
    a = np.array([np.mean(ours[m]) for m in methods])
    b = np.array([np.mean(fair[m]) for m in methods])
    tau, p = stats.kendalltau(a, b)
    draws, significant = [], 0
    for _ in range(DRAWS):
        x = np.array([np.mean(rng.choice(ours[m], len(ours[m]))) for m in methods])
        y = np.array([np.mean(rng.choice(fair[m], len(fair[m]))) for m in methods])
        t, q = stats.kendalltau(x, y)
        if t == t:
            draws.append(t)
            significant += bool(q < ALPHA)
    seeds = min(min(len(v) for v in ours.values()), min(len(v) for v in fair.values()))
    note = "one seed: the interval shows no seed uncertainty" if seeds < 2 else ""
    if not row["critical_tau"] == row["critical_tau"]:
        note = (note + "; " if note else "") + f"no τ over {len(methods)} methods reaches p < {ALPHA}"
    low, high = np.percentile(draws, [2.5, 97.5]) if draws else (math.nan, math.nan)
    return {
        **row,
        "tau": float(tau),
        "p_value": float(p),
        "tau_low": float(low),
        "tau_high": float(high),
        "power": significant / len(draws) if draws else math.nan,
        "note": note,
    }


def fair_values(path: Path) -> list[float]:
    """The fair table's concatenated Recall@1 (%) of each final repetition."""
    return [100.0 * rep["concatenated"][METRIC] for rep in read_json(path)["per_repetition"]]


def write(spec: dict, output_dir: Path) -> pd.DataFrame:
    """`spec`: `runs` (the experiment's runs.csv), `trunks` (variant → label), `fair` ({dataset:
    {method: its suite.fair summary.json}}, the experiment's method ids). Writes
    `ranking_vs_fair.csv` and `.md`."""
    runs = pd.read_csv(spec["runs"])
    rng = np.random.default_rng(0)
    rows = []
    for dataset, per_method in spec["fair"].items():
        fair = {method: fair_values(Path(path)) for method, path in per_method.items()}
        block = runs[runs["dataset"] == dataset]
        for variant, label in spec["trunks"].items():
            ours = {}
            for method in fair:
                values = block.loc[block["method"] == f"{method}@{variant}", METRIC].dropna()
                if len(values):
                    ours[method] = values.to_list()
            rows.append({"dataset": dataset, "trunk": label, **compare(ours, fair, rng)})
    table = pd.DataFrame(rows, columns=COLUMNS)
    with atomic_path(Path(output_dir) / "ranking_vs_fair.csv") as tmp:
        table.to_csv(tmp, index=False)
    with atomic_path(Path(output_dir) / "ranking_vs_fair.md") as tmp:
        tmp.write_text(_markdown(table))
    return table


def _number(value: float, form: str) -> str:
    return "" if value != value else format(value, form)


def _markdown(table: pd.DataFrame) -> str:
    lines = [
        "# Does the ranking on today's trunks agree with the fair table's?",
        "",
        "Kendall's τ-b between the methods' mean Recall@1 on each trunk and suite.fair's (BN-Inception, "
        "concatenated, the reality check's protocol), over the methods both ran; 95 % bootstrap interval over "
        f"seeds and repetitions ({DRAWS} draws); smallest p: what τ = 1 reaches over this many methods; "
        f"critical τ: the smallest τ significant at {ALPHA}; power: the share of the draws significant at "
        f"{ALPHA}.",
        "",
        "| dataset | trunk | methods | τ [95 %] | p | smallest p | critical τ | power | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        tau = _number(r.tau, "+.2f") + ("" if r.tau_low != r.tau_low else f" [{r.tau_low:+.2f}, {r.tau_high:+.2f}]")
        lines.append(
            f"| {r.dataset} | {r.trunk} | {r.methods} | {tau} | {_number(r.p_value, '.3f')} | "
            f"{_number(r.smallest_p, '.4f')} | {_number(r.critical_tau, '.2f')} | "
            f"{_number(r.power, '.2f')} | {r.note} |"
        )
    return "\n".join(lines) + "\n"
