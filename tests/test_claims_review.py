"""The independent review of the papers' claims (`workflow/config/claims_review.yaml`), for every
paper of `papers.yaml`: every reviewer entry says what the catalogue made of it and names only
claims that exist, and every claim of the paper's experiments answers to some entry
(tests/test_add_paper.py adds a paper in a copy and sees it fail until its claim is recorded)."""

import pytest
import yaml

from dmlbench.config.loading import load_yaml
from dmlbench.config.plan import Plan

from conftest import CONFIG_DIR, full_plan

PAPERS = list(load_yaml(CONFIG_DIR / "papers.yaml"))


def review_problems(plan: Plan, review: dict, paper: str) -> list[str]:
    """What is wrong with `paper`'s part of the review: an entry that does not say one thing, or
    names a reading or claim that does not exist, and every claim of the paper no entry names."""
    problems, named = [], set()
    entries = review.get(paper) or []
    ids = {entry["reviewer"] for entry in entries}
    for entry in entries:
        said = {"catalogued", "same_as", "left_out"} & set(entry)
        if len(said) != 1:
            problems.append(f"{entry['reviewer']}: says {sorted(said)}, not one of catalogued, same_as, left_out")
        if "same_as" in entry and entry["same_as"] not in ids:
            problems.append(f"{entry['reviewer']}: same_as {entry['same_as']!r}, no reading of {paper}")
        for key, claim_ids in (entry.get("catalogued") or {}).items():
            exp = plan.experiments.get(key) or {}
            if exp.get("paper") != paper:
                problems.append(f"{entry['reviewer']}: {key} is no experiment of {paper}")
            unknown = sorted(set(claim_ids) - {c["id"] for c in exp.get("claims") or []})
            if unknown:
                problems.append(f"{entry['reviewer']}: {key} has no claims {unknown}")
            named |= {(key, claim_id) for claim_id in claim_ids}
    problems += [
        f"{key} {claim['id']}: no reviewer entry names it"
        for key, exp in plan.experiments.items()
        if exp.get("paper") == paper
        for claim in exp.get("claims") or []
        if (key, claim["id"]) not in named
    ]
    return problems


@pytest.fixture(scope="module")
def catalogue():
    return full_plan(), yaml.safe_load((CONFIG_DIR / "claims_review.yaml").read_text())


@pytest.mark.parametrize("paper", PAPERS)
def test_every_reviewed_claim_is_accounted_for_and_every_catalogued_claim_was_read_by_the_reviewer(catalogue, paper):
    plan, review = catalogue
    assert review_problems(plan, review, paper) == []


def test_the_review_is_of_the_papers_of_the_catalogue(catalogue):
    plan, review = catalogue
    assert set(review) <= set(plan.papers)
