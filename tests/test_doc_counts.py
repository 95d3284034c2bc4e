"""The job counts of `full` that the README and the docs state are those of its dry run: read from
the sentences that state them and compared with the dry run's job table (a plan change that moves
a count fails here until the docs say the new one)."""

from __future__ import annotations

import re
from collections import Counter

import pytest
import yaml
from conftest import REPO
from test_workflow import job_counts

GPU_RULES = ("train", "fair_round", "fair_final", "reference", "knob_joined")


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def _stated(path: str, pattern: str) -> tuple[int, ...]:
    text = " ".join((REPO / path).read_text().split())  # sentences across line breaks
    found = re.search(pattern, text)
    assert found, f"{path}: no sentence matching {pattern!r}; the test reads the counts from it"
    return tuple(_number(group) for group in found.groups())


def _full_plan():
    from conftest import CONFIG_DIR, FULL_DIGESTS

    from dmlbench.config.plan import Plan

    digests = FULL_DIGESTS[1].split("=", 1)[1]
    return Plan.load(CONFIG_DIR, {"preset": "full", "trunk_sha256": yaml.safe_load(digests)})


@pytest.mark.slow
@pytest.mark.xdist_group("full_dry_run")
def test_the_counts_the_docs_state_are_the_dry_runs(full_dry_run):
    counts = job_counts(full_dry_run[0].stdout)
    total, gpu = counts["total"], sum(counts[rule] for rule in GPU_RULES)
    assert _stated("README.md", r"`full` is ([\d,]+) Snakemake jobs, ([\d,]+) of them GPU jobs") == (total, gpu)
    assert _stated("docs/pipeline.md", r"`full` is ([\d,]+) Snakemake jobs") == (total,)
    assert _stated(
        "docs/slurm.md",
        r"`full` has ([\d,]+) training, ([\d,]+) search-round \(up to 5 rounds in turn per submission\), "
        r"([\d,]+) final \(5 repetitions each\), ([\d,]+) reference and ([\d,]+) joined-fold jobs \(([\d,]+) GPU jobs",
    ) == (counts["train"], counts["fair_round"], counts["fair_final"], counts["reference"], counts["knob_joined"], gpu)
    assert _stated("docs/pipeline.md", r"tells; ([\d,]+) jobs of 8 fold trainings at `full`") == (counts["fair_round"],)
    assert _stated("docs/pipeline.md", r"repetitions \(5: ([\d,]+) jobs of 20 fold trainings") == (
        counts["fair_final"],
    )
    assert _stated("docs/pipeline.md", r"then their join; ([\d,]+) jobs at `full`\)") == (counts["knob_joined"],)


@pytest.mark.slow
@pytest.mark.xdist_group("full_dry_run")
def test_the_budgets_job_list_is_the_workflows(full_dry_run):
    """The preflight's budget groups `full`'s trainings into the jobs the workflow submits: as many
    of each GPU rule as the dry run lists (reference jobs train nothing and are not in it)."""
    counts = job_counts(full_dry_run[0].stdout)
    plan = _full_plan()
    listed = Counter(job["rule"] for job in plan.gpu_jobs())
    assert listed == {rule: counts[rule] for rule in GPU_RULES if rule != "reference"}
    assert sum(len(job["runs"]) for job in plan.gpu_jobs()) == len(plan.trainings())  # every training once
