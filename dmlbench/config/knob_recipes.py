"""Each paper's recipe beside the fair recipe (`workflow/config/knobs.yaml`): for every headline
method and dataset, the paper-table run whose settings are the paper's, suite.fair's run of the
same method, and the knobs between them (`dmlbench.knobs.derive`). Checked when the plan loads:
a setting in which two recipes differ without a knob stops it, naming the setting."""

from __future__ import annotations

from dataclasses import dataclass

from dmlbench.config.loading import load_yaml
from dmlbench.config.run import Run
from dmlbench.core.errors import ConfigError
from dmlbench.knobs import catalogue as knob_catalogue
from dmlbench.knobs.derive import Knob, derive

KNOBS_FILE = "knobs.yaml"
FAIR = "suite.fair"


@dataclass(frozen=True)
class Recipe:
    """A paper's recipe on one dataset: its paper-table run and suite.fair's run of the method."""

    paper: str
    dataset: str
    method: str  # the headline method's id in suite.fair
    paper_run: Run
    fair_run: Run


def catalogue(plan) -> knob_catalogue.Catalogue:
    if not hasattr(plan, "_knob_catalogue"):
        path = plan.config_dir / KNOBS_FILE
        plan._knob_catalogue = knob_catalogue.parse(load_yaml(path), str(path))
    return plan._knob_catalogue


def recipes(plan) -> list[Recipe]:
    """Every (paper, dataset) whose paper prints a table of its headline method on a dataset of
    suite.fair: the first experiment of suite.fair's `paper_numbers` of the method with the dataset."""
    if FAIR not in plan.experiments:  # a catalogue without the fair table: no fair recipe to compare with
        return []
    knobs = catalogue(plan)
    fair = plan.experiments[FAIR]
    where = f"{plan.config_dir / KNOBS_FILE}: headline"
    out = []
    for paper, method in knobs.headline.items():
        if method not in fair["methods"]:
            raise ConfigError(f"{where}.{paper}: {method!r} is not a method of {FAIR}")
        sources = fair.get("paper_numbers", {}).get(method) or {}
        for dataset in fair["datasets"]:
            source = next(
                (exp for exp in sources if exp != "none" and dataset in plan.experiments[exp].get("datasets", [])), None
            )
            if source is None:
                continue
            row = sources[source]
            if row not in plan.experiments[source].get("methods", []):
                raise ConfigError(
                    f"{where}.{paper}: {FAIR}'s paper number of {method} is {source}'s row "
                    f"{row!r}, which that experiment does not train"
                )
            out.append(Recipe(paper, dataset, method, Run(source, dataset, row, 0), Run(FAIR, dataset, method, 0)))
    return out


def protocol(plan, recipe: Recipe) -> dict[str, tuple[str, str]]:
    """The protocol parts of each recipe, as text: epoch selection, the data trained on, evaluation;
    the fair side from the settings the preset resolves (its patience, its folds)."""
    exp = plan.experiments[recipe.paper_run.experiment]
    folds = plan.fair_settings(FAIR)["folds"]
    stopping = plan.resolved(recipe.fair_run)["early_stopping"]
    tested = "recall@1" in ((exp.get("table") or {}).get("test_selected") or [])
    return {
        "selection": (
            "the best epoch on the test set" if tested else "the last epoch",
            f"the best epoch by {stopping.get('metric', 'map@r')} on the validation fold "
            f"(patience {stopping.get('patience')})",
        ),
        "folds": ("the whole training half", f"{folds - 1} of {folds} class-disjoint folds of the training half"),
        "evaluation": (
            "one model on the test half",
            f"the {folds} fold models' embeddings, concatenated, on the test half",
        ),
    }


def knobs_of(plan, recipe: Recipe) -> list[Knob]:
    where = (
        f"{plan.config_dir / KNOBS_FILE}: {recipe.paper} on {recipe.dataset} ({recipe.paper_run.experiment} vs {FAIR})"
    )
    return derive(
        plan.resolved(recipe.paper_run), plan.resolved(recipe.fair_run), catalogue(plan), where, protocol(plan, recipe)
    )


def check(plan) -> None:
    """Every recipe's knobs derive (the knob file is valid; no setting differs without a knob)."""
    for recipe in recipes(plan):
        knobs_of(plan, recipe)
