"""The printed table of `benchmarks.verdict_waves`: per scenario, paper and arm, the verdicts
decided, the false failures against the stated rates, the planted drop caught and the GPU-hours."""

from __future__ import annotations

import datetime
import platform

from dmlbench.verdicts import claims as claim_tests
from dmlbench.verdicts import numbers


def _share(tally: dict, part: str, whole: str) -> str:
    return f"{100 * tally.get(part, 0) / tally[whole]:.1f} %" if tally.get(whole) else "–"


def _design(design: dict) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in design.items()) + "}"


def markdown(rows: list[dict], command: str, designs: dict, seconds: float) -> str:
    stated = "; ".join(f"{arm}: second_wave {_design(d)}" for arm, d in designs.items())
    lines = [
        f"Simulated {datetime.date.today()}, {platform.node()} ({platform.machine()}), `{command}` "
        f"({seconds:.0f} s): {rows[0]['replicates']} replicates per scenario at σ = {rows[0]['sigma']}; "
        f"{stated}; stated rates α = {numbers.ALPHA} (each number), {claim_tests.ALPHA} (Holm over a paper's claims). "
        "Means per replicate; GPU-hours: training steps projected per training (evaluations on top).",
        "",
        "| scenario | paper | arm | claims decided | numbers decided | false claim failures "
        "| false number failures | planted drop caught | GPU-hours wave 1 + wave 2 (trainings wave 2) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        t, n = row["tally"], row["replicates"]
        wave2 = (
            f" + {row['hours_wave2']:,.1f} ({t.get('trainings wave 2', 0) / n:.1f})" if row["arm"] != "fixed" else ""
        )
        lines.append(
            f"| {row['scenario']} | {row['paper']} | {row['arm']} "
            f"| {t.get('claims decided', 0) / n:.1f} of {t.get('claims', 0) / n:.0f} "
            f"| {t.get('numbers decided', 0) / n:.1f} of {t.get('numbers', 0) / n:.0f} "
            f"| {_share(t, 'false claims', 'supported')} of {t.get('supported', 0) / n:.0f} "
            f"| {_share(t, 'false numbers', 'faithful numbers')} | {_share(t, 'caught', 'planted numbers')} "
            f"| {row['hours_wave1']:,.1f}{wave2} |"
        )
    return "\n".join(lines)
