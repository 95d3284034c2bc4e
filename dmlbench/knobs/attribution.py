"""How much of the change between a paper's recipe and the fair recipe each knob makes (suite.knobs).

Per recipe (paper × dataset) and method, from each step's Recall@1 per seed (%):
- the *cumulative* path: step k's change, Δ_k = mean(step k) − mean(step k−1) with its paired 95 %
  interval over seeds; the changes add up to the total, mean(fair) − mean(paper recipe), but each
  depends on the knobs before it;
- the *forward* and *backward* effects: each knob moved alone from the paper's recipe, and reverted
  alone from the fair recipe (`dmlbench.knobs.paths`), paired over seeds;
- each knob's *share*, the mean of the two, with its interval and test (`dmlbench.knobs.shares`),
  which does not depend on the order; the shares and the remainder sum to the total.
A step's number is its `metrics.json` Recall@1, or a concatenated step's `concatenated.json`: where
the paper selects on the test set and the selection knob is not moved, the best epoch on the test
set (the paper's run: `test_selected`, from its history; a run on folds keeps that epoch's model,
`data.fold.epochs_scored_on`), so that the choice is the selection knob's alone."""

from __future__ import annotations

from pathlib import Path

from dmlbench.core.errors import DmlbenchError
from dmlbench.core.io import read_json
from dmlbench.knobs import paired, shares

METRIC = "recall@1"
NOT_RUN = {"effect": float("nan"), "low": float("nan"), "high": float("nan"), "p": float("nan"), "untested": "not run"}


def step_value(path: Path, recipe: dict, step: str) -> float:
    """Recall@1 (%) of one seed of one step."""
    try:
        data = read_json(path)
        moved = set(recipe["moved"][step])
        selected = data.get("test_selected") if recipe["test_selected"] and not moved & {"data", "selection"} else None
        value = selected[METRIC] if selected and METRIC in selected else data["metrics"][METRIC]
        return 100.0 * float(value)
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise DmlbenchError(
            f"{path} cannot be read as a step's result ({type(error).__name__}: {error}): delete "
            f"it and rerun; the step that writes it runs again"
        ) from None


def method_attribution(recipe: dict, values: dict[str, dict[int, float]]) -> dict:
    """`values[step][seed]`: one method's numbers. Its steps, cumulative changes, forward and
    backward effects (Holm over the knobs), the knobs' shares, the remainder and the total."""
    steps = {name: dict(zip(("mean", "ci95"), paired.interval(list(v.values())))) for name, v in values.items()}
    cumulative, before = [], values["paper"]
    for knob, name in zip([k["name"] for k in recipe["knobs"]], recipe["cumulative"]):
        if name in values and before is not None:
            cumulative.append({"knob": knob, "step": name, **paired.change(values[name], before)})
        else:  # a cumulative step no share needs is not run (`paths.Paths.cumulative_only`)
            cumulative.append({"knob": knob, "step": name, **NOT_RUN})
        before = values.get(name)
    alone = paired.holm(
        [
            {"knob": knob, "step": step, "base": base, **paired.change(values[step], values[base])}
            for knob, (step, base) in recipe["alone"].items()
        ]
    )
    back = paired.holm(
        [
            {"knob": knob, "step": step, "base": base, **paired.change(values[step], values[base])}
            for knob, (step, base) in recipe["back"].items()
        ]
    )
    fair = recipe["cumulative"][-1] if recipe["cumulative"] else "paper"
    return {
        "steps": steps,
        "cumulative": cumulative,
        "alone": alone,
        "back": back,
        **shares.method_shares(recipe, values),
        "fair_step": fair,
    }
