"""A certificate in words: its headline (the paper's scorecard in a line), the error rates it
states, and the Markdown of `certificate.md` and the terminal (`dmlbench.verdicts.certificate`
builds what these read)."""

from __future__ import annotations

from dmlbench.verdicts import claim_kinds, numbers
from dmlbench.verdicts import claims as claim_tests

FIXTURE_STAMP = (
    "Fixture data: these verdicts test the code that computes them, not the paper (synthetic images, small networks)."
)


def error_rates(numbers_total: int) -> str:
    """What the verdicts' error rates are, and where they are measured (the multiplicity stated)."""
    judged = (
        f"Each of the {numbers_total} paper numbers is judged on its own at 5 % (no family-wise statement "
        "over them: a few numbers off by chance are expected in a long table); "
        if numbers_total
        else ""
    )
    return (
        judged + "a claim is listed as failing only at the family-wise rate (Holm, 5 %) at which one holds. "
        "How often these verdicts call a faithful reproduction failing at a preset's seeds, simulated through "
        'this code: docs/verdicts.md, "Operating characteristics".'
    )


def headline(cert: dict) -> str:
    """The paper's scorecard in a line: 'ms: N of M numbers reproduced (I inconclusive, B not
    reproduced, F failed), K of L claims hold (U underpowered, R reversed, N not run)'; the numbers left out
    where there are none (the suite's own experiments), zero counts left out."""
    n, c = cert["numbers"], cert["claims"]
    numbers_part = ""
    if n["total"]:
        rest = {
            "inconclusive": n.get(numbers.INCONCLUSIVE, 0),
            "not reproduced": n.get(numbers.BELOW, 0) + n.get(numbers.ABOVE, 0),
            "failed": n.get(numbers.FAILED, 0),
        }
        numbers_part = f"{n[numbers.REPRODUCED]} of {n['total']} numbers reproduced{_counted(rest)}, "
    rest = {
        claim_tests.UNDERPOWERED: c.get(claim_tests.UNDERPOWERED, 0),
        claim_tests.NOT_SIGNIFICANT: c.get(claim_tests.NOT_SIGNIFICANT, 0),
        claim_tests.REVERSED: c.get(claim_tests.REVERSED, 0),
        claim_tests.DIFFERS: c.get(claim_tests.DIFFERS, 0),
        claim_tests.GAIN_NOT_REPRODUCED: c.get(claim_tests.GAIN_NOT_REPRODUCED, 0),
        claim_tests.PARTIAL: c.get(claim_tests.PARTIAL, 0),
        claim_tests.FEW_SEEDS: c.get(claim_tests.FEW_SEEDS, 0),
        claim_tests.NO_SPREAD: c.get(claim_tests.NO_SPREAD, 0),
        claim_tests.NOT_RUN: c.get(claim_tests.NOT_RUN, 0),
    }
    return f"{cert['paper']}: {numbers_part}{c['holding']} of {c['total']} claims hold{_counted(rest)}"


def _counted(counts: dict) -> str:
    shown = ", ".join(f"{n} {what}" for what, n in counts.items() if n)
    return f" ({shown})" if shown else ""


def _sensitivity(judged: list[dict]) -> list[str]:
    """Two lines a reader may weigh the verdicts by: the numbers near the ceiling counted apart, and
    the verdicts with each paper number taken as one run of the same spread."""
    tested = [x for x in judged if x.get("as_one_run") is not None]
    if not tested:
        return []
    near = [x for x in tested if float(x["paper"]) >= numbers.NEAR_CEILING]
    reproduced = sum(x["verdict"] == numbers.REPRODUCED for x in tested)
    lines = [
        f"Counting each paper number as one run of the same spread as ours (most papers print one run): "
        f"{sum(x['as_one_run'] for x in tested)} of the {len(tested)} numbers tested are reproduced "
        f"({reproduced} as printed)."
    ]
    if near:
        lines.append(
            f"Near the ceiling (paper ≥ {numbers.NEAR_CEILING:g} %, where ±δ is much of the remaining error): "
            f"{len(near)} of them, {sum(x['verdict'] == numbers.REPRODUCED for x in near)} reproduced; "
            "the column *reproduced at δ ≥* lets a reader apply a narrower margin."
        )
    return lines


def _interval(mean, half) -> str:
    if mean is None:
        return "–"
    return f"{mean:.2f}" + ("" if half is None else f" ± {half:.2f}")


def _why(number: dict) -> str:
    """What an undecided or failed number needs: the seeds that would decide it, or its failed seeds."""
    if number["verdict"] == numbers.FAILED:
        seeds = ", ".join(f"seed {seed}" for seed in number.get("failed_seeds") or [])
        return f": NaN for {seeds or str(number.get('failed', 0)) + ' seed(s)'}"
    if number["verdict"] != numbers.INCONCLUSIVE:
        return ""
    if number["n"] < numbers.MIN_SEEDS:
        return f": fewer than {numbers.MIN_SEEDS} seeds"
    needed = number.get("seeds_needed")
    if not needed and number.get("zero_spread"):  # every seed the same number, its gap from the paper δ exactly
        return ": no spread, and the gap equals δ: no number of seeds decides it"
    return (
        f": {needed} seeds would decide it at this spread"
        if needed
        else f": more than {numbers.MAX_SEEDS} seeds would be needed at this spread"
    )


def markdown(cert: dict, only: str | None = None) -> str:
    """The certificate as Markdown (the terminal's and `certificate.md`); `only`: one experiment's
    numbers and claims (the counts stay the paper's)."""
    n = cert["numbers"]
    lines = [f"# Certificate: {cert['title']}", ""]
    if cert["fixture_data"]:
        lines += [f"**{FIXTURE_STAMP}**", ""]
    lines += [f"**{headline(cert)}** (preset {cert['preset']}).", ""]
    if n["total"]:
        lines.append("Numbers: " + ", ".join(f"{n[v]} {v}" for v in numbers.VERDICTS) + f" (of {n['total']}).")
        lines += _sensitivity([x for e in cert["experiments"] for x in e["numbers"]])
    lines += [
        "Claims: "
        + ", ".join(f"{cert['claims'][v]} {v}" for v in claim_tests.VERDICTS if cert["claims"][v])
        + f" (of {cert['claims']['total']}).",
        "",
    ]
    lines += [error_rates(n["total"]), ""]
    if cert.get("second_wave"):
        design = cert["second_wave"]
        once = design.get("second_look") == "claims"  # the numbers judged once, on the first wave's seeds
        judged = [x for e in cert["experiments"] for x in (e["claims"] if once else e["numbers"] + e["claims"])]
        lines += [
            f"Two looks ({design['spending']}, at most {design['max_seeds']} seeds a cell): "
            f"{sum(x.get('look') == 2 for x in judged)} of {len(judged)} {'claims' if once else 'numbers and claims'} "
            "at look 2, the rest at look 1 or, from a first wave at the cap, by the plain test"
            + ("; every number judged once, by the plain test on the first wave's seeds" if once else "")
            + ' (docs/verdicts.md, "The second wave").',
            "",
        ]
    if cert["not_holding"]:
        lines += ["Claims tested that do not hold:", ""] + [f"- {item}" for item in cert["not_holding"]] + [""]
    for exp in cert["experiments"]:
        if only and exp["id"] != only:
            continue
        lines += [f"## {exp['id']}: {exp['title']}", ""]
        counts = {v: sum(x["verdict"] == v for x in exp["numbers"]) for v in numbers.VERDICTS}
        if exp["numbers"]:
            lines += ["Numbers: " + ", ".join(f"{counts[v]} {v}" for v in numbers.VERDICTS if counts[v]) + ".", ""]
        decided = [x for x in exp["numbers"] if x["verdict"] not in (numbers.REPRODUCED, numbers.NOT_RUN)]
        if decided:  # what is not reproduced, and what more seeds would decide
            lines += [
                "| row | dataset | metric | paper | this suite (95 % interval, n) | δ | reproduced at δ ≥ | verdict |",
                "|---|---|---|---|---|---|---|---|",
            ]
            lines += [
                f"| {x['row']} | {x['dataset']} | {x['metric']}"
                f"{' (test-selected)' if x['test_selected'] else ''} "
                f"| {x['paper']} | {_interval(x['mean'], x['half'])} (n={x['n']}) | ±{x['delta']:.3f} "
                f"| {'–' if x.get('delta_at_least') is None else format(x['delta_at_least'], '.2f')} "
                f"| {numbers.SYMBOLS[x['verdict']]} {x['verdict']}{_why(x)} |"
                for x in decided
            ]
            lines.append("")
        if exp["claims"]:
            lines += [
                "| claim | rows | datasets; metrics | paper's gain | this suite's gain (95 % interval) "
                "| test | p (Holm; failure Holm) | power before the data | verdict |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
            for c in exp["claims"]:
                ours = f"{c['gain']:+.2f} [{c['low']:+.2f}, {c['high']:+.2f}]" if "low" in c else "–"
                test = claim_kinds.test_text(c) if "low" in c else "–"
                p = f"{c['p']:.3g} ({c['p_holm']:.3g}; {c['p_failure_holm']:.3g})" if "p_holm" in c else "–"
                paper = "–" if c.get("gain_paper") is None else f"{c['gain_paper']:+.2f}"
                power_text = "–" if c.get("power") is None else f"{c['power']:.2f}"
                lines.append(
                    f"| {c['id']}: {c['text']} ({c['source']}) | {c['rows']} "
                    f"| {c['where']} | {paper} | {ours} | {test} | {p} | {power_text} "
                    f"| {claim_kinds.verdict_text(c)} |"
                )
            lines.append("")
    lines += [
        "## Provenance",
        "",
        f"- commit: {cert['commit']}",
        f"- settings fingerprint (sha256 of the runs' resolved settings): {cert['fingerprint']}",
    ]
    lines += [f"- {dataset} manifest sha256: {digest}" for dataset, digest in cert["checksums"].items()]
    lines += [
        "",
        "Verdicts: "
        + "; ".join(f"{numbers.SYMBOLS[v]} {v}: {numbers.MEANINGS[v]}" for v in numbers.VERDICTS)
        + ". Claims: "
        + "; ".join(f"{claim_tests.SYMBOLS[v]} {v}: {claim_tests.MEANINGS[v]}" for v in claim_tests.VERDICTS)
        + ".",
    ]
    return "\n".join(lines) + "\n"
