"""A claim's keys checked for its kind (docs/verdicts.md, "Claims"), when the plan loads: two rows
the experiment runs for a pair kind, a swept method with its settings for a shape, a margin in
points; `check_experiment` checks every claim of an experiment."""

from __future__ import annotations

import math

from dmlbench.core.errors import ConfigError
from dmlbench.verdicts import claims as gain_tests
from dmlbench.verdicts.claim_kinds import BEST_QUOTED, KINDS, PAIR_KINDS, SHAPE_KINDS, listed, quoted_number

KEYS = {
    "id",
    "text",
    "kind",
    "better",
    "worse",
    "method",
    "variants",
    "at",
    "dataset",
    "metric",
    "gain",
    "margin",
    "source",
    "note",
    "unlike",
}


def check(claim: dict, exp: dict, at: str) -> None:
    """The kind's keys: two rows for a pair kind; a swept method, its settings in order and (peak,
    plateau) the setting `at` for a shape; a margin, where given, finite points > 0."""
    kind = claim.get("kind", "gain")
    if kind not in KINDS:
        raise ConfigError(f"{at}.kind: one of {', '.join(KINDS)}, not {kind!r}")
    pair, shape = {"better", "worse"}, {"method", "variants"} | ({"at"} if kind in ("peak", "plateau") else set())
    needed, barred = (pair, {"method", "at"}) if kind in PAIR_KINDS else (shape, pair)
    if needed - set(claim) or barred & set(claim):
        raise ConfigError(
            f"{at}: a {kind} claim names {', '.join(sorted(needed))}"
            + (f", not {', '.join(sorted(barred & set(claim)))}" if barred & set(claim) else "")
        )
    sweep = list(exp.get("sweep") or {})
    if (
        kind in PAIR_KINDS
        and "variants" in claim
        and (
            not sweep
            or not isinstance(claim["variants"], list)
            or not claim["variants"]
            or set(claim["variants"]) - set(sweep)
            or "@" in claim["better"] + claim["worse"]
        )
    ):
        raise ConfigError(
            f"{at}.variants: a pair claim over several settings of the sweep names bare methods and "
            f"a list of the sweep's settings ({', '.join(sweep) or 'none: no sweep'}), not "
            f"{claim['variants']!r}"
        )
    if kind in SHAPE_KINDS:
        if claim["method"] not in exp["methods"] or not sweep:
            raise ConfigError(
                f"{at}.method: a shape claim is about a method of a swept experiment "
                f"({', '.join(exp['methods'])}), not {claim['method']!r}"
            )
        variants = claim["variants"]
        if not isinstance(variants, list) or len(variants) < 3 or set(variants) - set(sweep):
            raise ConfigError(
                f"{at}.variants: three or more of the sweep's settings in the figure's order "
                f"({', '.join(sweep)}), not {variants!r}"
            )
        if "at" in claim and claim["at"] not in variants:
            raise ConfigError(f"{at}.at: one of the claim's variants ({', '.join(variants)}), not {claim['at']!r}")
        if kind == "plateau" and claim["at"] == variants[-1]:
            raise ConfigError(
                f"{at}.at: {claim['at']!r} is the last of the claim's variants ({', '.join(variants)}): a plateau "
                f"compares the settings after `at` with it; name the setting where the plateau starts"
            )
    margin = claim.get("margin")
    if margin is not None and (
        isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 < margin < math.inf
    ):
        raise ConfigError(f"{at}.margin: δ of an equivalence, finite points > 0, not {margin!r}")


def check_experiment(exp: dict, where: str) -> None:
    """Each claim has the keys of its kind (`claim_kinds`) and names rows, datasets and metrics of
    the experiment's table; ids are unique within the experiment (`check_ids`: within the paper)."""
    claims = exp.get("claims")
    if claims is None:
        return
    if not isinstance(claims, list):
        raise ConfigError(f"{where}.claims: a list of claims (- id: …), not {type(claims).__name__}")
    rows = set(exp["methods"]) | {f"{m}@{v}" for m in exp["methods"] for v in exp.get("sweep") or {}}
    metrics = (exp.get("table") or {}).get("metrics") or []
    for i, claim in enumerate(claims):
        at = f"{where}.claims[{i}]" + (f" ({claim.get('id')})" if isinstance(claim, dict) and claim.get("id") else "")
        if not isinstance(claim, dict):
            raise ConfigError(f"{at}: a mapping with keys {sorted(gain_tests.REQUIRED)} and those of its kind")
        unknown, missing = set(claim) - KEYS, gain_tests.REQUIRED - set(claim)
        if unknown or missing:
            raise ConfigError(
                f"{at}: keys are {sorted(KEYS)} (gain may be null); "
                + "; ".join(
                    f"{what} {sorted(names)}" for what, names in (("unknown", unknown), ("missing", missing)) if names
                )
            )
        check(claim, exp, at)
        if "better" in claim:
            _check_rows(claim, exp, rows, at)
        for dataset in listed(claim["dataset"]):
            if dataset not in exp["datasets"]:
                raise ConfigError(
                    f"{at}.dataset: {dataset!r} is not run by the experiment ({', '.join(exp['datasets'])})"
                )
        for metric in listed(claim["metric"]):
            if metric not in metrics:
                raise ConfigError(f"{at}.metric: {metric!r} is not in the experiment's table ({', '.join(metrics)})")
        gain = claim.get("gain")
        if gain is not None and (
            isinstance(gain, bool) or not isinstance(gain, (int, float)) or not math.isfinite(gain)
        ):
            raise ConfigError(f"{at}.gain: a finite number (points, the paper's better − worse) or null, not {gain!r}")


def _check_rows(claim: dict, exp: dict, rows: set, at: str) -> None:
    quoted = exp.get("quoted") or {}
    if claim["worse"] in rows and claim["worse"] in quoted:
        raise ConfigError(f"{at}.worse: {claim['worse']!r} names both a row the experiment runs and a quoted row")
    if claim["worse"] in quoted or claim["worse"] == BEST_QUOTED:
        _check_quoted(claim, exp, rows, at)
        return
    for key in ("better", "worse"):
        if claim[key] not in rows:
            raise ConfigError(f"{at}.{key}: {claim[key]!r} is no row the experiment runs ({', '.join(sorted(rows))})")
    if exp.get("sweep") and ("@" in claim["better"]) != ("@" in claim["worse"]):
        raise ConfigError(
            f"{at}: in an experiment with a sweep, name both rows with their variant "
            f"(method@variant) or neither (tested on every variant), not "
            f"{claim['better']!r} against {claim['worse']!r}"
        )
    if claim["better"] == claim["worse"]:
        raise ConfigError(f"{at}: better and worse are the same row {claim['better']!r}")


def _check_quoted(claim: dict, exp: dict, rows: set, at: str) -> None:
    """A gain claim against a quoted row (or `best quoted`): a run row beats a number the paper
    prints on every part."""
    if claim.get("kind", "gain") != "gain" or "variants" in claim or exp.get("sweep"):
        raise ConfigError(
            f"{at}.worse: only a gain claim of an experiment without a sweep is made against a quoted row"
        )
    if claim["better"] not in rows:
        raise ConfigError(f"{at}.better: {claim['better']!r} is no row the experiment runs ({', '.join(sorted(rows))})")
    for dataset in listed(claim["dataset"]):
        for metric in listed(claim["metric"]):
            if quoted_number(exp.get("quoted") or {}, claim["worse"], dataset, metric) is None:
                raise ConfigError(
                    f"{at}.worse: the quoted row {claim['worse']!r} has no number on {dataset} {metric}; "
                    f"name a quoted row printed there ({', '.join(exp.get('quoted') or {}) or 'none'}) "
                    f"or `{BEST_QUOTED}`"
                )
