"""One GPU job per joined step of a knob experiment and seed (`knob_joined`): the step's fold runs
trained in turn, then their test embeddings joined (`concatenated.json`). What the rule reads of
the plan: the fold runs, the files they read, the settings that decide their numbers (the rerun
trigger) and the job's spec. A fold run's folder and `metrics.json` are those of the plan's run."""

from __future__ import annotations

from dmlbench.config.run import Run
from dmlbench.training import run_folder


def joined_runs(plan, experiment: str, dataset: str, step: str, seed: int) -> list[Run]:
    """The fold runs of a joined step (`<method>@<paper>-<step>`), in fold order."""
    runs = [Run(experiment, dataset, f"{step}.fold{k}", seed) for k in range(plan.knob_folds)]
    index = plan.knob_run_index(experiment)
    missing = [run for run in runs if run not in index]
    if missing:
        from dmlbench.core.errors import ConfigError

        raise ConfigError(f"preset {plan.name} has no fold runs {missing[0].path(plan.name)} …: "
                          f"{experiment}/{dataset}/{step} joins no folds")
    return runs


def joined_inputs(plan, experiment: str, dataset: str, step: str, seed: int) -> list[str]:
    return sorted({path for run in joined_runs(plan, experiment, dataset, step, seed)
                   for path in plan.train_inputs(run)})


def joined_settings(plan, experiment: str, dataset: str, step: str, seed: int) -> str:
    """The fold runs' fingerprints (the settings that decide their numbers): the rerun trigger."""
    return " ".join(run_folder.fingerprint(plan.resolved(run))
                    for run in joined_runs(plan, experiment, dataset, step, seed))


def joined_spec(plan, experiment: str, dataset: str, step: str, seed: int) -> dict:
    """Each fold run's settings (numbers and side) and its metrics file."""
    folds = []
    for run in joined_runs(plan, experiment, dataset, step, seed):
        numbers, side = run_folder.numbers_and_side(plan.resolved(run))
        folds.append({"spec": numbers, "side": side, "metrics": f"{run.path(plan.name)}/metrics.json"})
    return {"folds": folds}
