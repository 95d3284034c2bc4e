"""`python -m dmlbench second-wave`: after the first wave, more seeds only where they decide
(docs/verdicts.md, "The second wave").

It reads each paper's certificate (`reports/<preset>/<paper>/certificate.json`, judged under the
preset's design at look 1) and gives a cell (row × dataset) more seeds only for an *inconclusive*
number or an *underpowered* claim at look 1 that a second look decides with probability 0.8 within
the cap `max_seeds`: a number at its `seeds_needed` (computed at look 2's levels), a claim at the
fewest seeds at which its power before the data, at look 2's nominal level over the paper's
family, reaches 0.8 (`claim_family.second_look_seeds`; a claim *not significant* had that power
already: more seeds are no remedy; one that no seeds within the cap give it had one look,
`claim_family.one_look`).
A cell takes the most seeds any of them asks for, and a planned claim's cells the most any of them
takes; new seeds are the smallest not yet trained, so a planned claim's paired rows stay paired. What was
decided, what is at look 2 already and what the cap cannot decide gets nothing. The seeds are
written to `reports/<preset>/second_wave.yaml` (`second_wave`), the cells already there kept: the
same certificates write the same file, and a certificate at look 2 asks for no third look.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from dmlbench.config import second_wave, verdict_spec
from dmlbench.config.loading import load_yaml
from dmlbench.core.errors import ConfigError
from dmlbench.core.io import atomic_path
from dmlbench.verdicts import claim_family, claim_kinds, numbers, sequential
from dmlbench.verdicts import claims as claim_tests


def _certificate(plan, paper: str, root: Path) -> tuple[dict, dict]:
    """The paper's certificate and its spec; refused when missing, stale or judged without the design."""
    file = root / f"reports/{plan.name}/{paper}/certificate.json"
    if not file.exists():
        raise ConfigError(f"{file} is missing: run the first wave (snakemake --config preset={plan.name} …) first")
    cert = json.loads(file.read_text())
    spec = verdict_spec.certificate_spec(plan, paper, verdict_spec.aggregated(plan, paper, root))
    if cert.get("second_wave") != spec.get("second_wave"):
        raise ConfigError(
            f"{file}: judged under second_wave {cert.get('second_wave')!r}, the preset states "
            f"{spec.get('second_wave')!r}: a first wave judged without the design spent all of α at its "
            "only look; state second_wave before the first wave (and run snakemake again)"
        )
    if cert["fingerprint"] != spec["fingerprint"]:  # the first wave's, the second planned but not run yet
        with second_wave.first_wave(plan):
            spec = verdict_spec.certificate_spec(plan, paper, verdict_spec.aggregated(plan, paper, root))
    if cert["fingerprint"] != spec["fingerprint"]:
        raise ConfigError(f"{file} is not of the runs this plan asks for: run snakemake first, then second-wave again")
    return cert, spec


def wanted(plan, root: Path = Path("."), papers=None) -> dict[tuple[str, str, str], tuple[int, list[str]]]:
    """(experiment, row, dataset) → (the seeds its cell needs, what they decide), from the
    certificates of `papers` (default: every paper the preset certifies)."""
    entry = second_wave.design(plan)
    if entry is None:
        raise ConfigError(
            f"preset {plan.name} states no second_wave design (max_seeds, spending): a second look needs "
            'boundaries fixed before the first (docs/verdicts.md, "The second wave")'
        )
    design, found, tied = sequential.design_of(entry), {}, []

    def want(key: str, row: str, dataset: str, seeds: int, why: str) -> None:
        had = found.get((key, row, dataset), (0, []))
        found[key, row, dataset] = (max(had[0], seeds), had[1] + [why])

    for paper in papers or verdict_spec.certified_papers(plan):
        cert, spec = _certificate(plan, paper, root)
        family = cert["claims"]["total"]
        for exp, spec_exp in zip(cert["experiments"], spec["experiments"]):
            for x in exp["numbers"]:
                needed = x.get("seeds_needed") or design.max_seeds + 1
                if x["verdict"] == numbers.INCONCLUSIVE and x.get("look") == 1 and needed <= design.max_seeds:
                    want(exp["id"], x["row"], x["dataset"], needed, f"{x['metric']} (paper {x['paper']})")
            for c in exp["claims"]:
                if c["verdict"] != claim_tests.UNDERPOWERED or c.get("look") != 1:
                    continue
                seeds = claim_family.second_look_seeds(c, spec_exp, design, family)
                cells = [] if seeds is None else claim_kinds.part_rows(c)
                run = [
                    (exp["id"], row, d) for rows, d, _ in cells for row in rows if f"{d}/{row}" in spec_exp["wave_one"]
                ]
                for cell in run:
                    want(*cell, seeds, f"claim {c['id']}")
                tied.append(run)
    return paired(found, tied)


def paired(found: dict, tied: list[list]) -> dict:
    """`found` with each group of `tied` (a planned claim's cells) at the most seeds any of them
    takes, until no group differs; a claim no second look decides (no cells) ties nothing."""
    tied = [group for group in tied if group]
    while any(len({found[cell][0] for cell in group}) > 1 for group in tied):
        for group in tied:
            top = max(found[cell][0] for cell in group)
            found.update({cell: (top, found[cell][1]) for cell in group})
    return found


def write(plan, root: Path = Path("."), papers=None) -> tuple[Path, dict]:
    """Write the second wave's seeds (the file's cells kept, new ones added); the file and its cells."""
    file = root / second_wave.path(plan)
    second_wave.cells(plan)  # the file's cells, checked
    cells: dict = (load_yaml(file).get("cells") or {}) if file.exists() else {}
    for (key, row, dataset), (seeds, why) in sorted(wanted(plan, root, papers).items()):
        name = f"{dataset}/{row}"
        if name in cells.get(key, {}):
            continue
        trained = {run.seed for run in plan.runs(key) if (run.method, run.dataset) == (row, dataset)}
        new = [s for s in range(max(trained) + seeds + 1) if s not in trained][: seeds - len(trained)]
        if new:
            cells.setdefault(key, {})[name] = {"seeds": new, "for": sorted(set(why))}
    file.parent.mkdir(parents=True, exist_ok=True)
    text = (
        f"# the second wave of preset {plan.name} (python -m dmlbench second-wave), from the first wave's "
        "certificates: per experiment, dataset/row → the seeds added and what they decide\n"
        + yaml.safe_dump({"design": second_wave.design(plan), "cells": cells}, sort_keys=True, allow_unicode=True)
    )
    with atomic_path(file) as tmp:
        tmp.write_text(text)
    return file, cells
