"""The fair protocol's GPU jobs: a search job (one round of the search) and a final job
(`repetitions_per_job` final repetitions), each one process that trains its fold trainings one
after another on one device.

A round of a method's search holds `parallel` trial slots: it asks each slot its parameters (in
slot order, so slot t is asked after slot t − 1 and after every slot of the earlier rounds, t −
`parallel` among them, was told), trains the slots' folds, and tells each slot's objective. A final
repetition trains its folds with the best parameters and writes their test embeddings. A fold that
finished with the same settings is not trained again (`fold_run.finished`), and a fold cut short
resumes from its checkpoint, so a job stopped anywhere loses at most the epoch in flight.

The spec carries the settings that decide the numbers (a rerun trigger of the workflow); the side
settings (tracking, keep, loader), shared by the method's fold trainings, come apart and are
merged into every fold training here.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dmlbench.fair import fold_run, study
from dmlbench.core.io import write_json
from dmlbench.run_config import delta


def with_side(settings: dict, side: dict) -> dict:
    """A fold training's settings with the side settings merged back."""
    return {**settings, **side}


def search_round(spec: dict) -> dict:
    """A search job's round spec, its folds' settings made whole from `base`."""
    return {
        "ask": spec["ask"],
        "space": spec["space"],
        "trials": [{**t, "folds": [_whole(spec["base"], f) for f in t["folds"]]} for t in spec["trials"]],
    }


def final_repetitions(spec: dict) -> list[dict]:
    """A final job's repetitions, each a whole repetition spec."""
    return [
        {"space": spec["space"], "output": r["output"], "folds": [_whole(spec["base"], f) for f in r["folds"]]}
        for r in spec["repetitions"]
    ]


def _whole(base: dict, fold: dict) -> dict:
    if "changes" not in fold:
        return fold
    return {**{k: v for k, v in fold.items() if k != "changes"}, "run": delta.apply(base, fold["changes"])}


def run_search_job(spec: dict, side: dict) -> list[dict]:
    """A search job: its round, whose record (the job's output) is written once it is told. A
    round finished before is asked, trained and told again from its records: its slots'
    parameters and fold results are kept, so nothing is trained twice."""
    return run_round(search_round(spec), side, Path(spec["output"]))


def run_round(spec: dict, side: dict, output: Path) -> list[dict]:
    """Ask, train and tell the round's slots; `output` lists what each slot was told."""
    ask = {**spec["ask"], "run": with_side(spec["ask"]["run"], side)}
    for trial in spec["trials"]:
        asked = study.ask({**ask, "slot": trial["slot"]}, Path(trial["params"]))
        print(f"trial {asked['trial']} (slot {asked['slot']}): {asked['params']}", file=sys.stderr, flush=True)
    told = []
    for trial in spec["trials"]:
        for fold in trial["folds"]:
            _train_fold(fold, spec["space"], side, Path(trial["params"]))
        outputs = [Path(fold["output"]) for fold in trial["folds"]]  # each fold's validation.json
        result = study.tell({**ask, "slot": trial["slot"]}, Path(trial["params"]), outputs, Path(trial["result"]))
        print(
            f"trial {result['trial']} (slot {trial['slot']}): objective {result['objective']}",
            file=sys.stderr,
            flush=True,
        )
        told.append(
            {
                "slot": trial["slot"],
                "trial": result["trial"],
                "status": result["status"],
                "objective": result["objective"],
            }
        )
    write_json(output, {"slots": told})
    return told


def run_final(spec: dict, side: dict, best: Path) -> list[dict]:
    """A final job: its repetitions in turn, each one's record written when its folds are done (the
    last one's is the job's output)."""
    return [
        {"repetition": rep["output"], "folds": run_repetition(rep, side, best, Path(rep["output"]))}
        for rep in final_repetitions(spec)
    ]


def run_repetition(spec: dict, side: dict, best: Path, output: Path) -> list[dict]:
    """Train the repetition's folds with the best parameters; `output` lists their results."""
    results = [_train_fold(fold, spec["space"], side, best, test=True) for fold in spec["folds"]]
    done = [
        {"fold": i, "status": "finished", "selected_epoch": r.get("selected_epoch"), "validation": r.get("validation")}
        for i, r in enumerate(results)
    ]
    write_json(output, {"folds": done})
    return done


def _train_fold(fold: dict, space: dict, side: dict, params: Path, test: bool = False) -> dict:
    """One fold training (or its result, when it finished with these settings); with `test`, its
    test embeddings too."""
    return fold_run.run(
        {"run": with_side(fold["run"], side), "space": space},
        params,
        Path(fold["run_dir"]),
        Path(fold["output"]),
        Path(fold["test_output"]) if test else None,
    )
