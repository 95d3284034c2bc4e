"""What a preset's report holds: per paper, every experiment of the catalogue with its status.

Status: `ran` (every planned run has metrics), `partial` (some have), `computed` (a CPU-exact
analysis), `quoted only` (in the catalogue but not run by this preset, nor by an earlier
invocation that chose it: the paper's numbers are shown alone), `figure only` (not run by this
preset, and the paper gives it as a figure without numbers: nothing to show), `not run` (a suite
experiment of no paper that this preset does not run: nothing to show). Written as
`reports/<preset>/contents.json`, from which the pages are drawn.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dmlbench.config import jobs
from dmlbench.config.plan import Plan

FIGURE_ONLY = "figure only"
NOT_RUN = "not run"


def _status(plan: Plan, key: str, folder: Path) -> tuple[str, str]:
    """From what is on disk: an experiment this invocation did not choose (`experiments=[…]`
    narrows it) keeps its status while its report folder is complete."""
    if key not in plan.experiment_ids and not (folder / Path(jobs.of(plan).report_marker(key)).name).exists():
        exp = plan.experiments[key]
        if exp.get("paper") is None and not plan.is_fair(key):
            return NOT_RUN, "not run by this preset; the suite's own experiment (no paper numbers to show)"
        if not (plan.is_analysis(key) or plan.is_fair(key) or exp.get("reported") or exp.get("quoted")):
            return FIGURE_ONLY, "not run by this preset; the paper prints no numbers for this figure"
        return "quoted only", "not run by this preset; the paper's numbers alone"
    if plan.is_analysis(key):
        done = (folder / "summary.md").exists()
        return ("computed", "CPU-exact analysis") if done else ("partial", "not computed yet")
    if plan.is_fair(key):
        planned = len(plan.fair_pairs(key))
        found = sum(Path(plan.fair_summary(key, d, m)).exists() for d, m in plan.fair_pairs(key))
        if (folder / "fair_table.csv").exists() and found >= planned:
            return "ran", f"{planned} of {planned} method × dataset searches and final runs"
        return "partial", f"{found} of {planned} method × dataset final runs"
    if plan.is_knobs(key):
        paths = len(plan.knob_paths(key))
        if (folder / "attribution.csv").exists():
            return "ran", f"{paths} recipe × dataset paths, {len(plan.runs(key))} runs"
        return "partial", "not aggregated yet"
    planned = len(plan.runs(key))
    found = len(pd.read_csv(folder / "runs.csv")) if (folder / "runs.csv").exists() else 0
    if found >= planned:
        return "ran", f"{planned} of {planned} runs"
    return "partial", f"{found} of {planned} runs"


def _catalogue_order(key: str) -> tuple:
    """Tables, then figures, then the rest (eq, grad), each by number: t1, t2, …, f1, …, eq."""
    kind = key.split(".")[1]
    number = int(kind[1:]) if kind[1:].isdigit() else 0
    return ({"t": 0, "f": 1}.get(kind[0], 2) if kind[1:].isdigit() else 2, number, kind)


def contents(plan: Plan, preset_dir: Path) -> dict:
    """Papers → experiments (id, title, status, figures) of `plan`'s report folder."""
    papers = []
    for paper, paper_title in plan.papers.items():
        keys = sorted((k for k in plan.experiments if k.split(".")[0] == paper), key=_catalogue_order)
        entries = []
        for key in keys:
            folder = preset_dir / key
            status, detail = _status(plan, key, folder)
            figures = (
                sorted(p.name for p in folder.glob("*.png"))
                if status not in ("quoted only", FIGURE_ONLY, NOT_RUN)
                else []
            )
            entries.append(
                {"id": key, "title": plan.title(key), "status": status, "detail": detail, "figures": figures}
            )
        if entries:
            papers.append({"paper": paper, "title": paper_title, "experiments": entries})
    return {"preset": plan.name, "toy_data": plan.toy_data, "papers": papers}
