"""The hyper-parameter search of one method × dataset: an Optuna study in a journal file.

`ask` (one job per trial slot) gives the slot its parameters, `tell` (after the slot's folds)
records the objective: the mean over the folds of the validation MAP@R at each fold's selected
epoch. Trials run as pipeline jobs; the journal (append-only, locked, on the shared filesystem)
survives `kill -9`, and both steps are idempotent: a slot that already has a trial gets the same
parameters again, a trial already told is not told twice, so a rerun after an interruption neither
repeats nor loses a trial. Slot 0 is the paper's setting. The sampler is Optuna's TPE (Bayesian
optimisation over a tree of Parzen estimators) with the constant liar for trials still running;
it is seeded by the slot, so a search is reproducible given the trials before it.
"""

from __future__ import annotations

import csv
from pathlib import Path

from dmlbench.errors import DmlbenchError
from dmlbench.fair import space as spaces
from dmlbench.io import atomic_path, write_json

OBJECTIVE = "map@r"
SLOT = "dmlbench_slot"


def read_json(path: Path) -> dict:
    """A step's JSON file; a damaged one is named, with what to do."""
    from dmlbench.io import read_json as read

    try:
        return read(path)
    except (ValueError, UnicodeDecodeError) as error:
        raise DmlbenchError(f"{path} is damaged ({error}): delete it and rerun; the step that writes it "
                            f"runs again") from None


def _optuna():
    import optuna  # imported by the search's steps only

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def open_study(journal: Path, name: str, seed: int = 0):
    optuna = _optuna()
    from optuna.storages.journal import JournalFileBackend

    Path(journal).parent.mkdir(parents=True, exist_ok=True)
    storage = optuna.storages.JournalStorage(JournalFileBackend(str(journal)))
    sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True)
    return optuna.create_study(study_name=name, storage=storage, direction="maximize",
                               sampler=sampler, load_if_exists=True)


def distributions(space: spaces.Space) -> dict:
    optuna = _optuna()
    out = {}
    for d in space.dimensions:
        if d.integer:
            out[d.path] = optuna.distributions.IntDistribution(int(d.low), int(d.high), log=d.log)
        else:
            out[d.path] = optuna.distributions.FloatDistribution(d.low, d.high, log=d.log)
    return out


def ask(spec: dict, output: Path) -> dict:
    """The parameters of trial slot `spec["slot"]`, written to `output` (params.json)."""
    optuna = _optuna()
    slot, space = spec["slot"], spaces.from_json(spec["space"])
    study = open_study(Path(spec["journal"]), spec["study"], seed=slot)
    trials = study.get_trials(deepcopy=False)
    own = [t for t in trials if t.user_attrs.get(SLOT) == slot]
    if own:
        number, params = own[0].number, own[0].params
    else:
        for t in trials:  # an ask killed between its two writes left a trial without a slot
            if t.state == optuna.trial.TrialState.RUNNING and SLOT not in t.user_attrs:
                study.tell(t.number, state=optuna.trial.TrialState.FAIL)
        waiting = any(t.state == optuna.trial.TrialState.WAITING for t in trials)
        if slot == 0 and not waiting:
            study.enqueue_trial(spec["paper"])
        trial = study.ask(distributions(space))
        trial.set_user_attr(SLOT, slot)
        number, params = trial.number, trial.params
    result = {"slot": slot, "trial": number, "params": params, "paper": params == spec["paper"],
              "study": spec["study"]}
    write_json(output, result)
    return result


def fold_objective(validations: list[dict]) -> float | None:
    """The mean validation MAP@R over the folds; None when a fold diverged."""
    if any(v["status"] != "finished" for v in validations):
        return None
    return sum(v["validation"][OBJECTIVE] for v in validations) / len(validations)


def tell(spec: dict, params_file: Path, validation_files: list[Path], output: Path) -> dict:
    """Record the trial's objective in the study (once) and write `output` (result.json)."""
    optuna = _optuna()
    asked = read_json(params_file)
    validations = [read_json(path) for path in validation_files]
    for path, v in zip(validation_files, validations):
        if v.get("params") != asked["params"]:
            raise DmlbenchError(f"{path} was trained with {v.get('params')}, not trial {asked['trial']}'s "
                                f"parameters {asked['params']}: delete it and rerun")
    objective = fold_objective(validations)
    study = open_study(Path(spec["journal"]), spec["study"])
    trial = next((t for t in study.get_trials(deepcopy=False) if t.number == asked["trial"]), None)
    if trial is None:
        raise DmlbenchError(f"{spec['journal']} has no trial {asked['trial']} (of {params_file}): the study "
                            f"was replaced; delete {Path(params_file).parent.parent} and rerun the search")
    if trial.state == optuna.trial.TrialState.RUNNING:
        if objective is None:
            study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial.number, objective)
    elif trial.state == optuna.trial.TrialState.COMPLETE and trial.value != objective:
        raise DmlbenchError(f"trial {trial.number} of {spec['journal']} was told {trial.value}, its folds now "
                            f"give {objective}: the folds were retrained; delete the search folder and rerun")
    result = {**asked, "objective": objective,
              "status": "finished" if objective is not None else "diverged",
              "folds": [{"fold": i, "status": v["status"], "selected_epoch": v.get("selected_epoch"),
                         "epochs_trained": v.get("epochs_trained"), **(v.get("validation") or {})}
                        for i, v in enumerate(validations)]}
    write_json(output, result)
    return result


def best(results: list[Path], output: Path, trials_csv: Path) -> dict:
    """The best finished trial (the first of equal objectives) → `output`; every trial → `trials_csv`."""
    rows = sorted((read_json(path) for path in results), key=lambda r: r["slot"])
    finished = [r for r in rows if r["objective"] is not None]
    if not finished:
        raise DmlbenchError(f"every trial of {rows[0]['study']} diverged ({len(rows)} trials): narrow the "
                            f"method's search space or lower the learning rate")
    chosen = max(finished, key=lambda r: r["objective"])
    _write_trials(rows, trials_csv)
    result = {"study": chosen["study"], "trial": chosen["trial"], "slot": chosen["slot"],
              "params": chosen["params"], "objective": chosen["objective"],
              "paper": next(r["params"] for r in rows if r["slot"] == 0),
              "trials": len(rows), "diverged": len(rows) - len(finished)}
    write_json(output, result)
    return result


def _write_trials(rows: list[dict], path: Path) -> None:
    params = sorted({key for r in rows for key in r["params"]})
    metrics = sorted({key for r in rows for f in r["folds"] for key in f
                      if key not in ("fold", "status", "selected_epoch", "epochs_trained")})
    header = ["slot", "trial", "status", "objective", *params]
    for fold in range(len(rows[0]["folds"])):
        header += [f"fold{fold}_{key}" for key in ("selected_epoch", "epochs_trained", *metrics)]
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for r in rows:
            line = [r["slot"], r["trial"], r["status"], r["objective"], *(r["params"].get(p) for p in params)]
            for f in r["folds"]:
                line += [f.get(key) for key in ("selected_epoch", "epochs_trained", *metrics)]
            writer.writerow(line)
