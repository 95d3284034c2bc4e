"""A paper's certificate: every paper number's verdict and every claim's test, counted, with what
the numbers rest on (commit, the manifests' sha256, the fingerprint of the runs' settings).

`build` reads the finished results only (each experiment's `runs.csv`, the per-seed numbers the
aggregate step writes), so the pipeline's rule and `python -m dmlbench verdict` give the same.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dmlbench.core.errors import DmlbenchError
from dmlbench.verdicts import asked, claim_family, numbers, sequential
from dmlbench.verdicts import claims as claim_tests


def _runs(path: Path, planned: dict[str, str]) -> pd.DataFrame:
    """An experiment's per-seed numbers (the aggregate step's runs.csv) of the runs asked."""
    if not path.exists():
        raise DmlbenchError(
            f"{path} is missing: the preset runs this experiment but its results are not "
            f"aggregated yet; run the pipeline first (snakemake --config preset=…), then "
            f"`python -m dmlbench verdict` again"
        )
    return asked.rows(pd.read_csv(path), planned, path)


def _per_seed(runs: pd.DataFrame | None, row: str, dataset: str, column: str, seeds=None) -> dict[int, float]:
    """{seed: the cell's number in `column`} (of `seeds` only, when given); a NaN: a failed seed."""
    if runs is None or column not in runs:
        return {}
    mine = runs[(runs["method"] == row) & (runs["dataset"] == dataset)]
    return {int(s): float(v) for s, v in zip(mine["seed"], mine[column]) if seeds is None or int(s) in seeds}


def _judged_seeds(exp: dict, row: str, dataset: str) -> set[int]:
    """The first wave's seeds of a cell: what look 1 judges, and all a test of one look ever is
    (a number under `second_look: claims`, a claim of `claim_family.one_look`)."""
    return set(exp["wave_one_seeds"].get(f"{dataset}/{row}", ()))


def _look_one(exp: dict, runs: pd.DataFrame | None):
    """(row, dataset, column) → {seed: number} of the experiment's first-wave seeds (`first_look`)."""
    return lambda row, d, column: _per_seed(runs, row, d, _column(exp, column), _judged_seeds(exp, row, d))


def _column(exp: dict, metric: str) -> str:
    return metric + numbers.SELECTED if metric in exp["selected"] else metric


def _numbers(exp: dict, runs: pd.DataFrame | None, design: sequential.Design | None) -> list[dict]:
    out = []
    for row, per_dataset in exp["reported"].items():
        for dataset, metrics in per_dataset.items():
            for metric, text in metrics.items():
                column = _column(exp, metric)
                ran = runs is not None and ((runs["method"] == row) & (runs["dataset"] == dataset)).any()
                once = design is not None and design.numbers_once  # the plain test on the first wave's seeds
                judged = _judged_seeds(exp, row, dataset) if once else None
                per_seed = _per_seed(runs, row, dataset, column, judged) if ran else {}
                delta = numbers.band_of(exp["margin"], metric) + numbers.printed_precision(text)
                n1 = None if once else (exp.get("wave_one") or {}).get(f"{dataset}/{row}")
                at = design.number_levels(n1) if design and n1 else numbers.plain
                found = numbers.judge(list(per_seed.values()), float(text), delta, at)
                if design and n1 and len(per_seed) > n1:  # decided at look 1: it stopped there
                    first = {s: v for s, v in per_seed.items() if s in _judged_seeds(exp, row, dataset)}
                    looked = numbers.judge(list(first.values()), float(text), delta, at)
                    if looked.verdict in numbers.DECIDED:
                        found, per_seed = looked, first
                entry = {
                    "row": row,
                    "dataset": dataset,
                    "metric": metric,
                    "paper": text,
                    "test_selected": column != metric,
                    **found.__dict__,
                    "failed_seeds": sorted(seed for seed, value in per_seed.items() if value != value),
                    **({"look": design.look(n1, len(per_seed))} if design and n1 else {}),
                }
                if column != metric and ran:  # the honest number beside it: each run's last epoch
                    honest = numbers.judge(
                        list(_per_seed(runs, row, dataset, metric, judged).values()), float(text), delta
                    )
                    entry["last_epoch"] = {"mean": honest.mean, "half": honest.half, "n": honest.n}
                out.append(entry)
    return out


def build(spec: dict, commit: str, root: Path = Path(".")) -> dict:
    """The certificate of `spec` (`dmlbench.config.verdict_spec`) from the runs under `root`."""
    experiments, design, frames = [], sequential.design_of(spec.get("second_wave")), []
    for exp in spec["experiments"]:
        runs = _runs(root / exp["runs"], exp["fingerprints"]) if exp["ran"] else None
        frames.append(runs)
        experiments.append(
            {
                "id": exp["id"],
                "title": exp["title"],
                "ran": exp["ran"],
                "numbers": _numbers(exp, runs, design),
                "claims": claim_family.tested(
                    exp, lambda row, d, column: _per_seed(runs, row, d, _column(exp, column))
                ),
            }
        )
    firsts = [claim_family.first_look(exp) for exp in spec["experiments"]] if design else []
    stopped = None
    if any(firsts):  # a second wave ran: each claim at look 1 first (one decided there stands)
        firsts = [first or exp for first, exp in zip(firsts, spec["experiments"])]
        stopped = [claim_family.tested(exp, _look_one(exp, runs)) for exp, runs in zip(firsts, frames)]
        claim_family.decide(stopped, firsts, design)
    claim_family.decide([e["claims"] for e in experiments], spec["experiments"], design, stopped)
    every_number = [n for e in experiments for n in e["numbers"]]
    every_claim = [c for e in experiments for c in e["claims"]]
    return {
        "paper": spec["paper"],
        "title": spec["title"],
        "preset": spec["preset"],
        "fixture_data": spec["fixture_data"],
        "commit": commit,
        "fingerprint": spec["fingerprint"],
        **({"second_wave": spec["second_wave"]} if design else {}),
        "checksums": {d: _checksum(root / p) for d, p in spec["checksums"].items()},
        "numbers": {v: sum(n["verdict"] == v for n in every_number) for v in numbers.VERDICTS}
        | {"total": len(every_number)},
        "claims": {v: sum(c["verdict"] == v for c in every_claim) for v in claim_tests.VERDICTS}
        | {"total": len(every_claim), "holding": sum(c["verdict"] in claim_tests.HOLDING for c in every_claim)},
        "not_holding": [f"{c['id']}: {c['verdict']}" for c in every_claim if c["verdict"] in claim_tests.FAILING],
        "experiments": experiments,
    }


def _checksum(path: Path) -> str:
    """The sha256 the suite wrote beside a manifest, or why there is none."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return "not recorded (data not prepared)"
