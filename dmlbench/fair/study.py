"""The hyper-parameter search of one method × dataset: an Optuna study in a journal file.

`ask` (one job per trial slot) gives the slot its parameters, `tell` (after the slot's folds)
records the objective: the mean over the folds of the validation MAP@R at each fold's selected
epoch. Trials run as pipeline jobs; the journal (append-only, locked, on the shared filesystem)
survives `kill -9`, and both steps are idempotent: a slot that already has a trial gets the same
parameters again, a trial already told is not told twice, so a rerun after an interruption neither
repeats nor loses a trial. Slot 0 is the paper's setting. The sampler is Optuna's TPE (Bayesian
optimisation over a tree of Parzen estimators) with the constant liar for trials still running;
it is seeded by the slot, so a search is reproducible given the trials before it.

A study is bound to its search settings (the search space and the resolved settings of the
method's fold training): their fingerprint is a user attribute of the study. Slot 0 asked with
other settings moves the journal aside (`study.journal.superseded-<fingerprint>`) and starts a new
study, as a run of changed settings trains afresh. Every later slot needs the trials of the slots
before it in the journal; a journal emptied, lost or damaged is named with what to do, except a
cut last line (a writer stopped mid-line), which is an unfinished record and is dropped.
"""

from __future__ import annotations

import csv
import os
import sys
from pathlib import Path

from dmlbench.core.errors import DmlbenchError
from dmlbench.fair import journal as journals
from dmlbench.fair import space as spaces
from dmlbench.core.io import atomic_path, write_json
from dmlbench.training import run_folder

OBJECTIVE = "map@r"
SLOT = "dmlbench_slot"
FINGERPRINT = "dmlbench_fingerprint"  # of the search settings (space and fold training)
SETTINGS = "dmlbench_settings"  # those settings, to name what changed


def read_json(path: Path) -> dict:
    """A step's JSON file; a damaged one is named, with what to do."""
    from dmlbench.core.io import read_json as read

    try:
        return read(path)
    except (ValueError, UnicodeDecodeError) as error:
        raise DmlbenchError(
            f"{path} is damaged ({error}): delete it and rerun; the step that writes it runs again"
        ) from None


def search_settings(spec: dict, run_keys_left_out=run_folder.NOT_IN_FINGERPRINT) -> dict:
    """What a study is bound to: the search space (its dimensions by path, so that a change names
    the dimension) and the method's fold training settings that decide its numbers."""
    space = spec["space"]
    dimensions = {d["path"]: d for d in space["dimensions"]}
    run = {key: value for key, value in spec["run"].items() if key not in run_keys_left_out}
    return {"space": {**dimensions, "tied": space["tied"]}, "run": run}


def _legacy_fingerprint(spec: dict) -> str:
    """The fingerprint earlier versions bound a study to (the fold settings with tracking, keep and
    loader in them): such a study belongs to these settings when only those differ."""
    return run_folder.fingerprint(search_settings(spec, run_keys_left_out=()))


def _bound_study(spec: dict, seed: int):
    """The study of `spec`, bound to its search settings; slot 0 replaces a study of other
    settings (moved aside, named), a later slot refuses it."""
    journal, settings = Path(spec["journal"]), search_settings(spec)
    wanted = run_folder.fingerprint(settings)
    study = journals.open_study(journal, spec["study"], seed)
    stored = study.user_attrs.get(FINGERPRINT)
    if stored is None and not study.get_trials(deepcopy=False):
        study.set_user_attr(SETTINGS, settings)
        study.set_user_attr(FINGERPRINT, wanted)
        return study
    if stored == wanted:
        return study
    if stored == _legacy_fingerprint(spec):  # an earlier version's study of these settings: kept
        study.set_user_attr(SETTINGS, settings)
        study.set_user_attr(FINGERPRINT, wanted)
        return study
    old = study.user_attrs.get(SETTINGS)
    changes = run_folder.changed_settings(old, settings) if old else ["(a study of an older version)"]
    if spec["slot"] > 0:
        raise DmlbenchError(
            f"{journal} holds a study of other search settings than slot {spec['slot']}'s "
            f"({'; '.join(changes[:6])}): delete {journal.parent}/round*.json "
            f"and trial*/params.json and rerun, "
            f"so that the search starts again from slot 0"
        )
    target = journal.with_name(f"{journal.name}.superseded-{(stored or 'unknown')[:12]}")
    lock = journals.journal_lock(journal)
    lock.acquire()
    try:
        os.replace(journal, target)
    finally:
        lock.release()
    print(
        f"search settings changed since {journal} was written ({'; '.join(changes[:6])}"
        f"{' …' if len(changes) > 6 else ''}): the search starts a new study; the previous one is in "
        f"{target}",
        file=sys.stderr,
    )
    return _bound_study(spec, seed)


def distributions(space: spaces.Space) -> dict:
    optuna = journals.quiet_optuna()
    out = {}
    for d in space.dimensions:
        if d.integer:
            out[d.path] = optuna.distributions.IntDistribution(int(d.low), int(d.high), log=d.log)
        else:
            out[d.path] = optuna.distributions.FloatDistribution(d.low, d.high, log=d.log)
    return out


def ask(spec: dict, output: Path) -> dict:
    """The parameters of trial slot `spec["slot"]`, written to `output` (params.json)."""
    optuna = journals.quiet_optuna()
    slot, space = spec["slot"], spaces.from_json(spec["space"])
    study = _bound_study(spec, seed=slot)
    trials = study.get_trials(deepcopy=False)
    own = [t for t in trials if t.user_attrs.get(SLOT) == slot]
    if own:
        number, params = own[0].number, own[0].params
    else:
        asked = {t.user_attrs.get(SLOT) for t in trials}
        missing = [s for s in range(slot) if s not in asked]
        if missing:
            raise DmlbenchError(
                f"{spec['journal']} has no trial of slot(s) {', '.join(map(str, missing))}, "
                f"asked before slot {slot}: the journal was emptied, lost or replaced. "
                f"{journals.remedy(Path(spec['journal']), 'Restore it, or')}"
            )
        for t in trials:  # an ask killed between its two writes left a trial without a slot
            if t.state == optuna.trial.TrialState.RUNNING and SLOT not in t.user_attrs:
                study.tell(t.number, state=optuna.trial.TrialState.FAIL)
        waiting = any(t.state == optuna.trial.TrialState.WAITING for t in trials)
        if slot == 0 and not waiting:
            study.enqueue_trial(spec["paper"])
        trial = study.ask(distributions(space))
        trial.set_user_attr(SLOT, slot)
        number, params = trial.number, trial.params
    result = {
        "slot": slot,
        "trial": number,
        "params": params,
        "paper": params == spec["paper"],
        "study": spec["study"],
        "fingerprint": study.user_attrs[FINGERPRINT],
    }
    write_json(output, result)
    return result


def fold_objective(validations: list[dict]) -> float | None:
    """The mean validation MAP@R over the folds; None when a fold diverged."""
    if any(v["status"] != "finished" for v in validations):
        return None
    return sum(v["validation"][OBJECTIVE] for v in validations) / len(validations)


def tell(spec: dict, params_file: Path, validation_files: list[Path], output: Path) -> dict:
    """Record the trial's objective in the study (once) and write `output` (result.json)."""
    optuna = journals.quiet_optuna()
    asked = read_json(params_file)
    validations = [read_json(path) for path in validation_files]
    for path, v in zip(validation_files, validations):
        if v.get("params") != asked["params"]:
            raise DmlbenchError(
                f"{path} was trained with {v.get('params')}, not trial {asked['trial']}'s "
                f"parameters {asked['params']}: delete it and rerun"
            )
    objective = fold_objective(validations)
    if asked.get("fingerprint") != run_folder.fingerprint(search_settings(spec)):
        raise DmlbenchError(
            f"{params_file} was asked with other search settings than this search's: delete it and rerun"
        )
    study = journals.open_study(Path(spec["journal"]), spec["study"])
    trial = next((t for t in study.get_trials(deepcopy=False) if t.number == asked["trial"]), None)
    if trial is None or study.user_attrs.get(FINGERPRINT) != asked["fingerprint"]:
        raise DmlbenchError(
            f"{spec['journal']} has no trial {asked['trial']} (of {params_file}): the journal was "
            f"emptied, lost or replaced. {journals.remedy(Path(spec['journal']), 'Restore it, or')}"
        )
    if trial.state == optuna.trial.TrialState.RUNNING:
        if objective is None:
            study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial.number, objective)
    elif trial.state == optuna.trial.TrialState.COMPLETE and trial.value != objective:
        raise DmlbenchError(
            f"trial {trial.number} of {spec['journal']} was told {trial.value}, its folds now "
            f"give {objective}: the folds were retrained; delete the search folder and rerun"
        )
    result = {
        **asked,
        "objective": objective,
        "status": "finished" if objective is not None else "diverged",
        "folds": [
            {
                "fold": i,
                "status": v["status"],
                "selected_epoch": v.get("selected_epoch"),
                "epochs_trained": v.get("epochs_trained"),
                "stopped_by": v.get("stopped_by"),
                **(v.get("validation") or {}),
            }
            for i, v in enumerate(validations)
        ],
    }
    write_json(output, result)
    return result


def best(results: list[Path], output: Path, trials_csv: Path) -> dict:
    """The best finished trial (the first of equal objectives) → `output`; every trial → `trials_csv`."""
    told = {path: read_json(path) for path in results}
    for path, row in told.items():  # told by one study: trials.csv holds no stale trial
        if row.get("fingerprint") != next(iter(told.values())).get("fingerprint"):
            raise DmlbenchError(f"{path} is a trial of other search settings than {results[0]}'s: delete it and rerun")
    rows = sorted(told.values(), key=lambda r: r["slot"])
    finished = [r for r in rows if r["objective"] is not None]
    if not finished:
        raise DmlbenchError(
            f"every trial of {rows[0]['study']} diverged ({len(rows)} trials): narrow the "
            f"method's search space or lower the learning rate"
        )
    chosen = max(finished, key=lambda r: r["objective"])
    _write_trials(rows, trials_csv)
    result = {
        "study": chosen["study"],
        "trial": chosen["trial"],
        "slot": chosen["slot"],
        "params": chosen["params"],
        "objective": chosen["objective"],
        "paper": next(r["params"] for r in rows if r["slot"] == 0),
        "trials": len(rows),
        "diverged": len(rows) - len(finished),
    }
    write_json(output, result)
    return result


def _write_trials(rows: list[dict], path: Path) -> None:
    params = sorted({key for r in rows for key in r["params"]})
    metrics = sorted(
        {
            key
            for r in rows
            for f in r["folds"]
            for key in f
            if key not in ("fold", "status", "selected_epoch", "epochs_trained")
        }
    )
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
