"""A certificate for the terminal (`python -m dmlbench verdict PAPER`): the scorecard, then the
decided rows, one line each, coloured where the output is a terminal (never colour alone: each
line starts with its verdict's symbol and word); `--all` prints the whole certificate instead."""

from __future__ import annotations

import os
import sys

from dmlbench.verdicts import certificate_text, claim_kinds, numbers
from dmlbench.verdicts import claims as claim_tests

GREEN, RED, YELLOW, RESET = "\033[32m", "\033[31m", "\033[33m", "\033[0m"
GOOD = {numbers.REPRODUCED, *claim_tests.HOLDING}
BAD = {
    numbers.BELOW,
    numbers.ABOVE,
    numbers.FAILED,
    claim_tests.REVERSED,
    claim_tests.DIFFERS,
    claim_tests.GAIN_NOT_REPRODUCED,
}
DECIDED_NUMBERS = (numbers.REPRODUCED, numbers.BELOW, numbers.ABOVE, numbers.FAILED)
UNDECIDED_CLAIMS = (claim_tests.NOT_RUN, claim_tests.FEW_SEEDS, claim_tests.NO_SPREAD)


def _power(claim: dict) -> str:
    return "–" if claim.get("power") is None else f"{claim['power']:.2f}"


def wants_colour(stream=sys.stdout) -> bool:
    """Colour on a terminal, unless NO_COLOR is set (no-color.org)."""
    return stream.isatty() and not os.environ.get("NO_COLOR")


def _paint(text: str, verdict: str, colour: bool) -> str:
    if not colour:
        return text
    tone = GREEN if verdict in GOOD else RED if verdict in BAD else YELLOW
    return f"{tone}{text}{RESET}"


def summary(cert: dict, colour: bool = False, only: str | None = None) -> str:
    """The scorecard, the numbers and claims that are decided (or failed), and what is left out."""
    lines = [certificate_text.headline(cert) + f" (preset {cert['preset']})"]
    if cert["fixture_data"]:
        lines.append(certificate_text.FIXTURE_STAMP)
    left = {"inconclusive numbers": 0, "numbers not run": 0, "claims not run or untestable": 0}
    for exp in cert["experiments"]:
        if only and exp["id"] != only:
            continue
        for x in exp["numbers"]:
            if x["verdict"] in DECIDED_NUMBERS:
                ours = "–" if x["mean"] is None else f"{x['mean']:.2f}" + (f" ± {x['half']:.2f}" if x["half"] else "")
                text = (
                    f"{numbers.SYMBOLS[x['verdict']]} {x['verdict']:<12} {exp['id']} {x['row']} {x['dataset']} "
                    f"{x['metric']}: paper {x['paper']}, ours {ours} (n={x['n']}), δ ±{x['delta']:.3f}"
                )
                lines.append(_paint(text, x["verdict"], colour))
            else:
                left["inconclusive numbers" if x["verdict"] == numbers.INCONCLUSIVE else "numbers not run"] += 1
        for c in exp["claims"]:
            if c["verdict"] in UNDECIDED_CLAIMS:
                left["claims not run or untestable"] += 1
                continue
            text = (
                f"{claim_kinds.verdict_text(c):<14} {exp['id']} {c['id']} ({c['rows']}; "
                f"{c['where']}): ours {c['gain']:+.2f} [{c['low']:+.2f}, {c['high']:+.2f}], "
                f"Holm p {c['p_holm']:.3g}, failure {c['p_failure_holm']:.3g}, power {_power(c)}"
            )
            lines.append(_paint(text, c["verdict"], colour))
    shown = ", ".join(f"{n} {what}" for what, n in left.items() if n)
    if shown:
        lines.append(f"not listed: {shown} (--all for the whole certificate)")
    return "\n".join(lines) + "\n"
