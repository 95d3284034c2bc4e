"""The verdicts' operating characteristics, simulated through the real certificate code.

`python -m benchmarks.verdict_oc [--preset full] [--replicates 20] [--sigma 0.3 0.4 0.5]`

For every paper with a certificate, at the preset's planned runs and seeds, each replicate writes
the runs.csv files an aggregate step would (every run's number of every reported cell drawn as the
paper's printed number + N(0, σ); a cell without a paper number gets a fixed 50 + the same noise)
and builds the certificate with `dmlbench.verdicts.certificate.build`, as the pipeline does. Four
scenarios:

- *faithful*: the paper is exactly right;
- *one method 1 / 2 points low*: every number of one method (the paper's most-cited row) planted
  that far below the paper's;
- *claim planted*: the better row of the paper's gain claim with the smallest paper gain (profs:
  "HNCM boosts C-PROFS further", −0.9 on its smallest part) set 3 points above its worse row on
  every number (the paper's numbers of the worse row + 3): our runs find the sentence true by 3
  points on every part.

Printed per paper and scenario: numbers reproduced (of those the preset trains with ≥ 3 seeds),
the planted numbers caught (*below*), and of the claims the paper's own numbers support (every part
of the sentence true in the paper's table: `supported`), the share that hold (holds, equivalent or
gain reproduced) and the share listed as failing (the certificate's `not_holding`). A benchmark
prints figures; nothing here is a test.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from dmlbench.config import verdict_spec
from dmlbench.config.plan import Plan
from dmlbench.verdicts import certificate, claim_kinds, numbers
from dmlbench.verdicts import claims as claim_tests

CONFIG_DIR = Path(__file__).resolve().parents[1] / "workflow" / "config"
UNREPORTED = 50.0  # a cell the paper prints no number for: a flat level, so no claim is supported by it


def _paper_value(reported: dict, row: str, dataset: str, metric: str, quoted: dict | None = None) -> float | None:
    """A row's printed number, or a quoted row's (`best quoted`: the best there)."""
    text = reported.get(row, {}).get(dataset, {}).get(metric)
    if text is None and quoted:
        competitor = claim_kinds.quoted_number(quoted, row, dataset, metric)
        return None if competitor is None else competitor[1]
    return None if text is None else float(text)


def supported(claim: dict, reported: dict, delta: float, quoted: dict | None = None) -> bool:
    """Whether every part of the claim's sentence is true in the paper's own table (its quoted
    rows included)."""
    kind = claim.get("kind", "gain")
    parts = [(d, m) for d in claim_kinds.listed(claim["dataset"]) for m in claim_kinds.listed(claim["metric"])]
    for dataset, metric in parts:
        if kind in claim_kinds.PAIR_KINDS:
            suffixes = [f"@{v}" for v in claim["variants"]] if "variants" in claim else [""]
            for suffix in suffixes:
                b = _paper_value(reported, claim["better"] + suffix, dataset, metric)
                w = _paper_value(reported, claim["worse"] + suffix, dataset, metric, quoted)
                if b is None or w is None:
                    return False
                margin = claim.get("margin") or delta
                if kind == "gain" and not b > w:
                    return False
                if kind == "equivalent" and not abs(b - w) < margin:
                    return False
                if kind == "no_gain" and not b - w < margin:
                    return False
            continue
        values = [_paper_value(reported, f"{claim['method']}@{v}", dataset, metric) for v in claim["variants"]]
        if any(v is None for v in values):
            return False
        at = claim["variants"].index(claim["at"]) if "at" in claim else None
        if kind == "increasing" and not np.polyfit(range(len(values)), values, 1)[0] > 0:
            return False
        if kind == "decreasing" and not np.polyfit(range(len(values)), values, 1)[0] < 0:
            return False
        if kind == "peak" and not all(values[at] > v for i, v in enumerate(values) if i != at):
            return False
        if kind == "plateau" and not all(abs(v - values[at]) < (claim.get("margin") or delta) for v in values[at:]):
            return False
    return True


def _runs_csv(exp: dict, runs, rng, sigma: float, shift: dict) -> pd.DataFrame:
    """The per-seed numbers of an experiment's planned runs: the paper's + noise (+ a planted shift).
    `rng`: one generator for every run, or run → its own (the same run, the same numbers)."""
    metrics = sorted({m for per in exp["reported"].values() for ms in per.values() for m in ms})
    for claim in exp["claims"]:
        metrics += [m for m in claim_kinds.listed(claim["metric"]) if m not in metrics]
    rows = []
    for run in runs:
        key = f"{run.dataset}/{run.method}/seed{run.seed}"
        accepted = exp["fingerprints"][key]  # several: a linked run's (`run_dedup`); its training's first
        fingerprint = accepted if isinstance(accepted, str) else accepted[0]
        row = {"dataset": run.dataset, "method": run.method, "seed": run.seed, "fingerprint": fingerprint}
        noise = rng(run) if callable(rng) else rng
        planted = shift.get(run.method, 0.0)
        level_of, points = planted if isinstance(planted, tuple) else (run.method, planted)
        for metric in metrics:  # a planted (row, points): that row's paper number + points, every cell
            paper = _paper_value(exp["reported"], level_of, run.dataset, metric)
            paper = _paper_value(exp["reported"], run.method, run.dataset, metric) if paper is None else paper
            value = (UNREPORTED if paper is None else paper) + points + noise.normal(0.0, sigma)
            row[metric] = value
            row[metric + numbers.SELECTED] = value
        rows.append(row)
    return pd.DataFrame(rows)


def _scenarios(spec: dict) -> dict[str, tuple[dict, str | None]]:
    """Scenario → (planted shift per row: points, or (another row, points) to set it from that row's
    paper numbers, the claim planted to hold)."""
    counted = Counter(row for exp in spec["experiments"] for row in exp["reported"])
    target = counted.most_common(1)[0][0] if counted else None
    gains = [c for e in spec["experiments"] for c in e["claims"] if c.get("kind", "gain") == "gain" and "better" in c]
    # the hardest to find: the gain claim whose paper gain is smallest (profs: HNCM over C-PROFS, −0.9)
    first_gain = min(gains, key=lambda c: c["gain"] if c.get("gain") is not None else float("inf"), default=None)
    scenarios = {"faithful": ({}, None)}
    if target:
        scenarios[f"{target} 1 point low"] = ({target: -1.0}, None)
        scenarios[f"{target} 2 points low"] = ({target: -2.0}, None)
    if first_gain:  # our runs find its better row 3 points above its worse row on every part
        planted = {first_gain["better"]: (first_gain["worse"], 3.0)}
        scenarios[f"{first_gain['better']} = {first_gain['worse']} +3 ({first_gain['id']})"] = (
            planted,
            first_gain["id"],
        )
    return scenarios


def simulate(plan: Plan, paper: str, sigma: float, replicates: int, seed: int = 0) -> list[dict]:
    spec = verdict_spec.certificate_spec(plan, paper)
    runs = {exp["id"]: plan.runs(exp["id"]) for exp in spec["experiments"]}
    rng = np.random.default_rng(seed)
    out = []
    for scenario, (shift, planted_claim) in _scenarios(spec).items():
        tally = Counter()
        for _ in range(replicates):
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp)
                for exp in spec["experiments"]:
                    path = root / exp["runs"]
                    path.parent.mkdir(parents=True, exist_ok=True)
                    _runs_csv(exp, runs[exp["id"]], rng, sigma, shift).to_csv(path, index=False)
                cert = certificate.build(spec, "simulated", root)
            _count(cert, spec, shift, planted_claim, tally)
        out.append({"paper": paper, "sigma": sigma, "scenario": scenario, **_rates(tally)})
    return out


def _count(cert: dict, spec: dict, shift: dict, planted_claim: str | None, tally: Counter) -> None:
    for exp, spec_exp in zip(cert["experiments"], spec["experiments"]):
        for number in exp["numbers"]:
            if number["n"] < numbers.MIN_SEEDS:
                continue
            if isinstance(shift.get(number["row"]), tuple):  # set from another row: no expected verdict
                continue
            planted = number["row"] in shift
            tally["planted numbers" if planted else "numbers"] += 1
            wanted = {-1: numbers.BELOW, 0: numbers.REPRODUCED, 1: numbers.ABOVE}[
                int(np.sign(shift.get(number["row"], 0)))
            ]
            tally["planted caught" if planted else "reproduced"] += number["verdict"] == wanted
        for claim, declared in zip(exp["claims"], spec_exp["claims"]):
            if claim["id"] == planted_claim:
                tally["planted claims"] += 1
                tally["planted holds"] += claim["verdict"] in claim_tests.HOLDING
            delta = numbers.band_of(spec_exp["margin"], claim_kinds.listed(declared["metric"])[0])
            if not supported(declared, spec_exp["reported"], delta, spec_exp.get("quoted")):
                continue
            if shift:  # a supported claim whose better row is planted low: the broken method's claims
                moved = shift.get(declared.get("better"), 0)
                if not isinstance(moved, tuple) and moved < 0:
                    tally["broken claims"] += 1
                    tally["broken hold"] += claim["verdict"] in claim_tests.HOLDING
                    tally["broken failing"] += claim["verdict"] in claim_tests.FAILING
                continue
            tally["supported"] += 1
            tally["supported hold"] += claim["verdict"] in claim_tests.HOLDING
            tally["supported failing"] += claim["verdict"] in claim_tests.FAILING


def _rates(tally: Counter) -> dict:
    def share(part: str, whole: str) -> float | None:
        return tally[part] / tally[whole] if tally[whole] else None

    return {
        "numbers": tally["numbers"] + tally["planted numbers"],
        "reproduced": share("reproduced", "numbers"),
        "planted_caught": share("planted caught", "planted numbers"),
        "supported": tally["supported"],
        "supported_hold": share("supported hold", "supported"),
        "supported_failing": share("supported failing", "supported"),
        "planted_claim_holds": share("planted holds", "planted claims"),
        "broken_claims": tally["broken claims"],
        "broken_hold": share("broken hold", "broken claims"),
        "broken_failing": share("broken failing", "broken claims"),
    }


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def markdown(rows: list[dict], preset: str, replicates: int) -> str:
    lines = [
        f"Simulated {datetime.date.today()}, {platform.node()} ({platform.machine()}), "
        f"`python -m benchmarks.verdict_oc --preset {preset} --replicates {replicates}`: "
        f"{replicates} replicates per paper, σ and scenario, at the preset's planned seeds.",
        "",
        "| paper | σ | scenario | numbers (≥ 3 seeds) | reproduced | planted numbers caught (below / above) "
        "| supported claims | hold | listed failing | planted claim holds "
        "| claims of the row planted low: n | hold | listed failing |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['paper']} | {r['sigma']} | {r['scenario']} | {r['numbers']} | {_pct(r['reproduced'])} "
            f"| {_pct(r['planted_caught'])} | {r['supported']} | {_pct(r['supported_hold'])} "
            f"| {_pct(r['supported_failing'])} | {_pct(r['planted_claim_holds'])} "
            f"| {r['broken_claims'] or '–'} | {_pct(r['broken_hold'])} | {_pct(r['broken_failing'])} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="full")
    parser.add_argument("--replicates", type=int, default=20)
    parser.add_argument("--sigma", type=float, nargs="+", default=[0.3, 0.4, 0.5])
    parser.add_argument("--papers", nargs="+", default=None)
    args = parser.parse_args(argv)
    plan = Plan.load(CONFIG_DIR, {"preset": args.preset})
    papers = args.papers or [  # papers with printed numbers (the suite's own claims have none to draw from)
        p
        for p in verdict_spec.certified_papers(plan)
        if any(e["reported"] for e in verdict_spec.certificate_spec(plan, p)["experiments"])
    ]
    rows = [row for sigma in args.sigma for paper in papers for row in simulate(plan, paper, sigma, args.replicates)]
    print(markdown(rows, args.preset, args.replicates))


if __name__ == "__main__":
    main()
