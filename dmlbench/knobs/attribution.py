"""How much of the gap between a paper's recipe and the fair recipe each knob makes (suite.knobs).

Per recipe (paper × dataset) and method, from each step's Recall@1 per seed (%):
- the *cumulative* path: step k's change, Δ_k = mean(step k) − mean(step k−1) with its paired 95 %
  interval over seeds; the changes add up to the total, mean(fair) − mean(paper recipe);
- the *one-at-a-time* effects: e_k = mean(knob k moved alone) − mean(its base: the paper recipe,
  or the knobs it needs moved alone), paired t-test over seeds, Holm-adjusted over the recipe's
  knobs (none with fewer than 3 seeds or zero spread: "too few seeds", "no spread"); the
  *interaction* is what the effects leave of the total, total − Σ e_k;
- the gap of the headline method over the baseline at every step, and which knobs' cumulative
  steps close it.
A step's number is its `metrics.json` Recall@1 (the paper's test-selected epoch where the paper
selects on the test set and neither the data nor the selection knob is moved, since only then
were the epochs scored on the test set), or a concatenated step's `concatenated.json`."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from dmlbench.errors import DmlbenchError
from dmlbench.fair.intervals import mean_interval
from dmlbench.io import read_json
from dmlbench.verdicts import claims

ALPHA = 0.05
METRIC = "recall@1"
MIN_SEEDS = 3  # an effect over fewer paired seeds is shown, not tested
TOO_FEW, NO_SPREAD = "too few seeds", "no spread"


def step_value(path: Path, recipe: dict, step: str) -> float:
    """Recall@1 (%) of one seed of one step."""
    try:
        data = read_json(path)
        moved = set(recipe["moved"][step])
        selected = data.get("test_selected") if recipe["test_selected"] and not moved & {"data", "selection"} else None
        value = selected[METRIC] if selected and METRIC in selected else data["metrics"][METRIC]
        return 100.0 * float(value)
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise DmlbenchError(f"{path} cannot be read as a step's result ({type(error).__name__}: {error}): delete "
                            f"it and rerun; the step that writes it runs again") from None


def interval(values: list[float]) -> tuple[float, float]:
    """(mean, 95 % half-width); NaN half-width with fewer than two seeds."""
    if len(values) < 2:
        return float(np.mean(values)), math.nan
    return mean_interval(values)


def _change(after: dict, before: dict) -> dict:
    """after − before over the seeds: mean, paired 95 % interval, two-sided p. No test (NaN p, and
    `untested` saying why) with fewer than `MIN_SEEDS` seeds (the interval is still given) or where
    every seed's difference is the same (zero spread: no interval, where a t-test would call any
    nonzero difference certain)."""
    result = claims.test(after, before)
    gain = float(np.mean(list(after.values())) - np.mean(list(before.values())))
    if isinstance(result, str):
        return {"effect": gain, "low": math.nan, "high": math.nan, "p": math.nan, "untested": TOO_FEW}
    if not result.se > 1e-9 * max(1.0, abs(result.gain)):  # equal differences, up to rounding: no interval
        return {"effect": result.gain, "low": math.nan, "high": math.nan, "p": math.nan, "untested": NO_SPREAD}
    if min(result.n_better, result.n_worse) < MIN_SEEDS:  # the interval shown (wide), no test
        return {"effect": result.gain, "low": result.low, "high": result.high, "p": math.nan, "untested": TOO_FEW}
    return {"effect": result.gain, "low": result.low, "high": result.high, "p": result.p, "untested": None}


def method_attribution(recipe: dict, values: dict[str, dict[int, float]]) -> dict:
    """`values[step][seed]`: one method's numbers. Its steps, cumulative changes, one-at-a-time
    effects (Holm over the knobs), interaction and total."""
    paper = values["paper"]
    steps = {name: dict(zip(("mean", "ci95"), interval(list(v.values())))) for name, v in values.items()}
    cumulative, before = [], paper
    for knob, name in zip([k["name"] for k in recipe["knobs"]], recipe["cumulative"]):
        cumulative.append({"knob": knob, "step": name, **_change(values[name], before)})
        before = values[name]
    alone = [{"knob": knob, "step": step, "base": base, **_change(values[step], values[base])}
             for knob, (step, base) in recipe["alone"].items()]
    tested = [i for i, row in enumerate(alone) if row["p"] == row["p"]]
    adjusted = claims.holm([alone[i]["p"] for i in tested])
    for row in alone:
        row["p_holm"] = math.nan
    for i, p in zip(tested, adjusted):
        alone[i]["p_holm"] = p
    for row in alone:
        row["significant"] = bool(row["p_holm"] < ALPHA)
    fair = recipe["cumulative"][-1] if recipe["cumulative"] else "paper"
    total = steps[fair]["mean"] - steps["paper"]["mean"]
    interaction = total - sum(row["effect"] for row in alone)
    return {"steps": steps, "cumulative": cumulative, "alone": alone, "total": total,
            "interaction": interaction, "fair_step": fair}


def gaps(recipe: dict, headline: dict[str, dict[int, float]], baseline: dict[str, dict[int, float]]) -> dict:
    """Headline − baseline (points, means over the seeds both have) at the paper recipe, the fair
    recipe, and the change each cumulative step makes to it."""
    def gap(step):
        seeds = sorted(set(headline[step]) & set(baseline[step]))
        return float(np.mean([headline[step][s] - baseline[step][s] for s in seeds]))

    at = {"paper": gap("paper")}
    changes, before = [], at["paper"]
    for knob, name in zip([k["name"] for k in recipe["knobs"]], recipe["cumulative"]):
        at[name] = gap(name)
        changes.append({"knob": knob, "change": at[name] - before})
        before = at[name]
    return {"paper": at["paper"], "fair": before, "changes": changes}


def landing_line(paper: str, baseline_label: str, headline_label: str, per_dataset: list[dict],
                 labels: dict[str, str]) -> str:
    """One line per paper: how much of the headline's gap over the baseline the knobs explain
    (means over the paper's datasets in this run)."""
    y = float(np.mean([g["paper"] for g in per_dataset]))
    x = float(np.mean([g["paper"] - g["fair"] for g in per_dataset]))
    datasets = len(per_dataset)
    where = f"mean over {datasets} dataset{'s' if datasets > 1 else ''}"
    if y <= 0:
        return (f"{paper}: {headline_label} has no gap over {baseline_label} under the paper's recipe "
                f"({y:+.1f} points, {where})")
    closing: dict[str, float] = {}
    for g in per_dataset:
        for change in g["changes"]:
            closing[change["knob"]] = closing.get(change["knob"], 0.0) - change["change"] / datasets
    named = [f"{labels[k]} ({v:.1f})" for k, v in sorted(closing.items(), key=lambda kv: -kv[1]) if v > 0.05]
    if x <= 0:
        return (f"{paper}: the {y:.1f}-point gap of {headline_label} over {baseline_label} does not shrink "
                f"under the fair recipe (it changes by {-x:+.1f}; {where})")
    if x > y:
        return (f"{paper}: the {y:.1f}-point gap of {headline_label} over {baseline_label} is closed and reversed "
                f"under the fair recipe ({y - x:+.1f}) by: {', '.join(named) or 'no single knob'} ({where})")
    return (f"{paper}: {x:.1f} of the {y:.1f}-point gap of {headline_label} over {baseline_label} is explained "
            f"by: {', '.join(named) or 'no single knob'} ({where})")
