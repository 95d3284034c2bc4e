"""The independent review of the papers' claims (`workflow/config/claims_review.yaml`): every
reviewer entry says what the catalogue made of it, names only claims that exist, and every claim
of the papers' experiments answers to some entry."""

import yaml

from dmlbench.config.plan import Plan

from conftest import CONFIG_DIR


def test_every_reviewed_claim_is_accounted_for_and_every_catalogued_claim_was_read_by_the_reviewer():
    review = yaml.safe_load((CONFIG_DIR / "claims_review.yaml").read_text())
    plan = Plan.load(CONFIG_DIR, {"preset": "full"})
    named = set()
    for paper, entries in review.items():
        ids = {entry["reviewer"] for entry in entries}
        for entry in entries:
            said = {"catalogued", "same_as", "left_out"} & set(entry)
            assert len(said) == 1, entry["reviewer"]
            if "same_as" in entry:
                assert entry["same_as"] in ids, entry
            for key, claim_ids in (entry.get("catalogued") or {}).items():
                assert plan.experiments[key]["paper"] == paper, (entry["reviewer"], key)
                known = {c["id"] for c in plan.experiments[key].get("claims") or []}
                assert set(claim_ids) <= known, (entry["reviewer"], set(claim_ids) - known)
                named |= {(key, claim_id) for claim_id in claim_ids}
    every = {
        (key, c["id"])
        for key, exp in plan.experiments.items()
        if exp.get("paper") in review
        for c in exp.get("claims") or []
    }
    assert every - named == set(), "catalogued claims no reviewer entry names"
