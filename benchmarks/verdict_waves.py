"""What the second wave buys (issue 70, item 5): `verdict_oc`'s simulation, adaptive, through the
real certificate and second-wave code.

`python -m benchmarks.verdict_waves [--preset full] [--replicates 5] [--sigma 0.4] [--max-seeds 10]
[--spending obrien_fleming | pocock] [--small-max-seeds N] [--wave-one-claim-seeds 5]
[--arms "two waves" "small wave 1" "claims looked twice"] [--papers ms dro …]`

Four arms per replicate and scenario, on the same draws (each run's numbers come from a generator
of its own, seeded by the replicate and the run: a run two arms or both waves train has the same
numbers, and wave 2 reruns nothing of wave 1):

- *fixed seeds*: the preset's plan as it is (each experiment's seeds, the claims' cells' seeds of
  `claim_seeds`), no second wave; the certificates (`certificate.build`) at the plain tests;
- *two waves*: the same preset with `second_wave: {max_seeds, spending}` stated. Wave 1 trains the
  same runs, judged at look 1's boundaries, its certificates written where the pipeline writes them;
  `second_wave_plan.write` (what `python -m dmlbench second-wave` runs) plans the extra seeds from
  them into reports/<preset>/second_wave.yaml; `Plan.load` again (which reads that file) gives wave
  2's runs, drawn alike, and the certificates are built again, at look 2's boundaries;
- *small wave 1*: the same, but a smaller first wave: `second_wave` also states
  `wave_one_claim_seeds: 5`, so the claims' cells train only their 5 smallest `claim_seeds` (seeds
  0-4, as every other cell of a paper table; a figure's one-seed claim cells too), and the rest of
  the claims' seeds is left to the planner, under a cap `max_seeds` of what the claims would have had
  (default: the most seeds any simulated experiment's `claim_seeds` gives a claim);
- *claims looked twice*: the small first wave with `second_look: claims`: every number judged once,
  at the plain test on the first wave's seeds, so the planner adds seeds for the claims alone.

Scenarios: *faithful* (the paper's number + N(0, σ)), and each paper's most-cited row 2 points low
on every number (`verdict_oc`'s planted drop). Printed per paper and in total, per arm (means per
replicate): claims decided (verdict holding or failing, `claims.HOLDING` + `claims.FAILING`, of
every claim of the certificate), numbers decided (reproduced, below or above, of those run), false
failures (claims the paper's own table supports, reading no planted row, listed failing; numbers of
unplanted rows called below or above), the planted numbers caught (below), and GPU-hours: the
training steps projected per training (`training.projection.gpu_hours`, as `second-wave` prints
them; evaluations on top) of the simulated papers' experiments, wave 1 + wave 2's extra trainings.
A benchmark prints figures; nothing here is a test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import sys
import tempfile
import time
import zlib
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks import verdict_oc
from benchmarks.verdict_waves_table import markdown
from dmlbench.config import second_wave_plan, verdict_spec
from dmlbench.config.plan import Plan
from dmlbench.run_config import RunConfig
from dmlbench.training import projection
from dmlbench.verdicts import certificate, claim_kinds, numbers, sequential
from dmlbench.verdicts import claims as claim_tests

CONFIG_DIR = verdict_oc.CONFIG_DIR
DECIDED_NUMBERS = (numbers.REPRODUCED, numbers.BELOW, numbers.ABOVE)
DECIDED_CLAIMS = claim_tests.HOLDING + claim_tests.FAILING
MAX_SEEDS = 10  # the cap docs/verdicts.md states in its example (`second_wave: {max_seeds: 10}`)
WAVE_ONE_CLAIM_SEEDS = 5  # the small first wave: a claim's cells train seeds 0-4, as every other cell
WAVED = ("two waves", "small wave 1", "claims looked twice")


def draws(seed: int):
    """run → its own generator: the same run draws the same numbers in either arm and wave."""
    return lambda run: np.random.default_rng(
        [seed, zlib.crc32(f"{run.experiment}/{run.dataset}/{run.method}/{run.seed}".encode())]
    )


class Costs:
    """The GPU-hours of trainings (training steps, `projection.gpu_hours`), one per run cell: a
    cell's seeds differ in nothing the projection reads."""

    def __init__(self, plan: Plan):
        self.plan, self.known = plan, {}

    def __call__(self, runs) -> float:
        total = 0.0
        for run in runs:
            key = (run.experiment, run.dataset, run.method)
            if key not in self.known:
                self.known[key] = projection.gpu_hours(RunConfig.from_dict(self.plan.resolve(run)), run.dataset)
            total += self.known[key]
        return total


def _ran(spec: dict) -> list[str]:
    return [exp["id"] for exp in spec["experiments"] if exp["ran"]]


def _judge(plan: Plan, spec: dict, root: Path, noise, sigma: float, shift: dict) -> dict:
    """The runs.csv of every experiment the spec's certificate reads, drawn, and the certificate."""
    for exp in spec["experiments"]:
        if exp["ran"]:  # only what the preset runs: a runs.csv more would count as aggregated
            path = root / exp["runs"]
            path.parent.mkdir(parents=True, exist_ok=True)
            verdict_oc._runs_csv(exp, plan.runs(exp["id"]), noise, sigma, shift).to_csv(path, index=False)
    return certificate.build(spec, "simulated", root)


def largest_claim_seeds(plan: Plan, papers: list[str]) -> int:
    """The most seeds the catalogue's `claim_seeds` give any claim of the papers' experiments run."""
    keys = {k for p in papers for k in _ran(verdict_spec.certificate_spec(plan, p))}
    return max((len(s) for k in keys for s in (plan.experiments[k].get("claim_seeds") or {}).values()), default=0)


class Arms:
    """The plans of the fixed arm and of each waved arm (arm → its `second_wave` design; loaded in an
    empty folder: no second_wave.yaml read) and, per arm and paper, the first wave's spec and
    GPU-hours, the same in every replicate."""

    def __init__(self, config: dict, designs: dict[str, dict], papers: list[str]):
        self.configs = {arm: {**config, "second_wave": design} for arm, design in designs.items()}
        with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
            self.fixed = Plan.load(CONFIG_DIR, config)
            self.plans = {arm: Plan.load(CONFIG_DIR, c) for arm, c in self.configs.items()}
        self.designs, self.papers = designs, papers
        first = {"fixed": self.fixed, **self.plans}
        self.specs = {arm: {p: verdict_spec.certificate_spec(plan, p) for p in papers} for arm, plan in first.items()}
        self.costs = Costs(self.fixed)
        self.hours = {
            arm: {p: self.costs(r for k in _ran(self.specs[arm][p]) for r in plan.runs(k)) for p in papers}
            for arm, plan in first.items()
        }


def _waves(arms: Arms, arm: str, root: Path, noise, sigma: float, shifts: dict) -> dict:
    """A waved arm's replicate: {"wave 1", "wave 2": paper → (spec, certificate), "cells": the
    second wave's cells as planned, "extra": paper → wave 2's trainings}."""
    plan, out = arms.plans[arm], {"wave 1": {}, "wave 2": {}, "extra": {}}
    for paper in arms.papers:
        spec = arms.specs[arm][paper]
        cert = _judge(plan, spec, root, noise, sigma, shifts[paper])
        file = root / f"reports/{plan.name}/{paper}/certificate.json"
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(json.dumps(cert))
        out["wave 1"][paper] = (spec, cert)
    with contextlib.chdir(root):  # the plan reads reports/<preset>/second_wave.yaml from here
        _, out["cells"] = second_wave_plan.write(plan, root, arms.papers)
        second = Plan.load(CONFIG_DIR, arms.configs[arm]) if out["cells"] else plan
    for paper in arms.papers:
        spec, cert = out["wave 1"][paper]
        keys = _ran(spec)
        out["extra"][paper] = sorted(
            set(r for k in keys for r in second.runs(k)) - set(r for k in keys for r in plan.runs(k))
        )
        if out["extra"][paper]:  # the paper's certificate at look 2
            spec = verdict_spec.certificate_spec(second, paper)
            cert = _judge(second, spec, root, noise, sigma, shifts[paper])
        out["wave 2"][paper] = (spec, cert)
    return out


def replicate(arms: Arms, sigma: float, shifts: dict, seed: int) -> dict:
    """One replicate of every arm: {"fixed": paper → (spec, certificate), waved arm → `_waves`}."""
    noise = draws(seed)
    out: dict = {"fixed": {}}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "fixed"
        for paper in arms.papers:
            spec = arms.specs["fixed"][paper]
            out["fixed"][paper] = (spec, _judge(arms.fixed, spec, root, noise, sigma, shifts[paper]))
        for i, arm in enumerate(arms.plans):
            out[arm] = _waves(arms, arm, Path(tmp) / f"waves{i}", noise, sigma, shifts)
    return out


def count(spec: dict, cert: dict, shift: dict, tally: Counter) -> None:
    """Add a certificate's decided numbers and claims, false failures and planted catches."""
    for exp, spec_exp in zip(cert["experiments"], spec["experiments"]):
        for x in exp["numbers"]:
            if x["verdict"] == numbers.NOT_RUN:
                continue
            planted = x["row"] in shift
            tally["numbers"] += 1
            tally["numbers decided"] += x["verdict"] in DECIDED_NUMBERS
            tally["planted numbers" if planted else "faithful numbers"] += 1
            if planted:
                tally["caught"] += x["verdict"] == numbers.BELOW
            else:
                tally["false numbers"] += x["verdict"] in (numbers.BELOW, numbers.ABOVE)
        for claim, declared in zip(exp["claims"], spec_exp["claims"]):
            tally["claims"] += 1
            tally["claims decided"] += claim["verdict"] in DECIDED_CLAIMS
            rows = {row for part, _, _ in claim_kinds.part_rows(claim) for row in part}
            delta = numbers.band_of(spec_exp["margin"], claim_kinds.listed(declared["metric"])[0])
            if rows & set(shift) or not verdict_oc.supported(
                declared, spec_exp["reported"], delta, spec_exp.get("quoted")
            ):
                continue
            tally["supported"] += 1
            tally["false claims"] += claim["verdict"] in claim_tests.FAILING


def scenarios(arms: Arms) -> dict[str, dict[str, dict]]:
    """Scenario → paper → planted shift: faithful, and each paper's most-cited row 2 points low."""
    drops = {}
    for paper in arms.papers:
        found = verdict_oc._scenarios(arms.specs["fixed"][paper])
        drops[paper] = next((shift for name, (shift, _) in found.items() if name.endswith("2 points low")), {})
    return {"faithful": {p: {} for p in arms.papers}, "one row 2 points low": drops}


def simulate(arms: Arms, sigma: float, replicates: int, seed: int = 0) -> list[dict]:
    """Per scenario, arm and paper (and "total"): the tallies over the replicates and the GPU-hours."""
    rows = []
    for scenario, shifts in scenarios(arms).items():
        names = ["fixed", *arms.plans]
        tallies = {(arm, p): Counter() for arm in names for p in [*arms.papers, "total"]}
        extra = {arm: Counter() for arm in names}
        for r in range(replicates):
            out = replicate(arms, sigma, shifts, seed * 1000 + r)
            for paper in arms.papers:
                count(*out["fixed"][paper], shifts[paper], tallies["fixed", paper])
                for arm in arms.plans:
                    count(*out[arm]["wave 2"][paper], shifts[paper], tallies[arm, paper])
                    extra[arm][paper] += arms.costs(out[arm]["extra"][paper])
                    tallies[arm, paper]["trainings wave 2"] += len(out[arm]["extra"][paper])
        for arm in names:
            for paper in arms.papers:
                tallies[arm, "total"].update(tallies[arm, paper])
            hours = dict(arms.hours[arm], total=sum(arms.hours[arm].values()))
            more = dict(extra[arm], total=sum(extra[arm].values()))
            rows += [
                {"scenario": scenario, "paper": p, "arm": arm, "sigma": sigma, "replicates": replicates}
                | {
                    "tally": dict(tallies[arm, p]),
                    "hours_wave1": hours[p],
                    "hours_wave2": more.get(p, 0.0) / replicates,
                }
                for p in [*arms.papers, "total"]
            ]
    return rows


def printed_papers(plan: Plan) -> list[str]:
    """The papers with printed numbers (the suite's own claims have none to draw from)."""
    return [
        p
        for p in verdict_spec.certified_papers(plan)
        if any(e["reported"] for e in verdict_spec.certificate_spec(plan, p)["experiments"])
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="full")
    parser.add_argument("--replicates", type=int, default=5)
    parser.add_argument("--sigma", type=float, default=0.4)
    parser.add_argument("--max-seeds", type=int, default=MAX_SEEDS)
    parser.add_argument("--spending", choices=sequential.SPENDINGS, default=sequential.DEFAULT_SPENDING)
    parser.add_argument("--small-max-seeds", type=int, default=None, help="default: the largest claim_seeds")
    parser.add_argument("--wave-one-claim-seeds", type=int, default=WAVE_ONE_CLAIM_SEEDS)
    parser.add_argument("--arms", nargs="+", choices=WAVED, default=list(WAVED))
    parser.add_argument("--papers", nargs="+", default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    config = {"preset": args.preset}
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        plan = Plan.load(CONFIG_DIR, config)
    papers = args.papers or printed_papers(plan)
    small = args.small_max_seeds or largest_claim_seeds(plan, papers)
    designs = {
        "two waves": {"max_seeds": args.max_seeds, "spending": args.spending},
        "small wave 1": {
            "max_seeds": small,
            "spending": args.spending,
            "wave_one_claim_seeds": args.wave_one_claim_seeds,
        },
    }
    designs["claims looked twice"] = {**designs["small wave 1"], "second_look": "claims"}
    designs = {arm: designs[arm] for arm in args.arms}
    rows = simulate(Arms(config, designs, papers), args.sigma, args.replicates, args.seed)
    command = "python -m benchmarks.verdict_waves " + shlex.join(argv if argv is not None else sys.argv[1:])
    print(markdown(rows, command.strip(), designs, time.perf_counter() - started))


if __name__ == "__main__":
    main()
