"""Products whose sources were lost are made again (docs/interrupted-runs.md).

Snakemake (since 7.7) does not remake a missing intermediate file while the files made from it
are present and up to date: a run's deleted `metrics.json`, or a table a failed step removed, would
stay lost behind an existing report ("Nothing to be done"). Before the DAG is built, `reconcile`
removes what was made from a lost file, so that Snakemake makes the chain again: an experiment's
aggregated tables when a run's `metrics.json` is missing or one of the tables is, the results
table likewise, and the preset's page when anything it shows is missing (a retrieved-images
figure too). Only cheap products are removed (tables, the page); a run is trained again only where
its model is lost too (the train step evaluates a present model without training). A dry run
only says what a run would remake.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dmlbench.config import jobs

AGGREGATE_OUTPUTS = ("table.csv", "table.md", "runs.csv", "recall_at_k.png", "learning_curves.png")


def lost(plan, root: Path = Path(".")) -> tuple[list[Path], list[str]]:
    """(products to remove, one line per lost source) for `plan`'s preset under `root`."""
    preset, stale, said = plan.name, [], []
    every_missing = []
    for key in plan.experiment_ids:
        if _untabled(plan, key):
            continue
        missing = [root / run.path(preset) / "metrics.json" for run in plan.runs(key)]
        missing = [path for path in missing if not path.exists()]
        every_missing += missing
        outputs = [root / f"reports/{preset}/{key}" / name for name in AGGREGATE_OUTPUTS]
        present = [path for path in outputs if path.exists()]
        if present and (missing or len(present) < len(outputs)):
            stale += present
            lost_one = missing[0] if missing else next(path for path in outputs if not path.exists())
            said.append(f"{lost_one} is missing{_more(missing)}: {key}'s tables are made again from its runs")
    parquet = root / f"results/{preset}/runs.parquet"
    if parquet.exists() and every_missing:
        stale.append(parquet)
    page = root / f"reports/{preset}/index.html"
    shown = [root / f"reports/{preset}/{key}/table.csv" for key in plan.experiment_ids if not _untabled(plan, key)]
    shown += [root / path for path in jobs.of(plan).retrieved_outputs()]  # the retrieved-images figures
    if page.exists() and (stale or not parquet.exists() or not all(path.exists() for path in shown)):
        stale.append(page)
        if not said:
            gone = [path for path in [parquet, *shown] if not path.exists()] or every_missing
            said.append(f"{gone[0]} is missing: the report is made again")
    return stale, said


def _untabled(plan, key: str) -> bool:
    """Experiments without an aggregated table (analyses, the fair table, knob paths)."""
    return plan.is_analysis(key) or plan.is_fair(key) or plan.is_knobs(key)


def _more(missing: list[Path]) -> str:
    return f" (and {len(missing) - 1} more runs' metrics)" if len(missing) > 1 else ""


def reconcile(plan, dry_run: bool) -> None:
    """Remove the products of lost files (said on stderr); a dry run only says it."""
    stale, said = lost(plan)
    for line in said:
        prefix = "dmlbench: (dry run: not removed) " if dry_run else "dmlbench: "
        print(prefix + line, file=sys.stderr)
    if dry_run:
        return
    for path in stale:
        path.unlink(missing_ok=True)


def dry_run_asked(argv: list[str]) -> bool:
    """Whether Snakemake's command line asks a dry run (-n, -np, --dry-run): Snakemake says so only
    after the DAG is built, too late to leave the files alone."""
    short = [a for a in argv[1:] if a.startswith("-") and not a.startswith("--") and a[1:].isalpha()]
    return any(a in ("--dry-run", "--dryrun", "--dry_run") for a in argv) or any("n" in a[1:] for a in short)
