"""The landing page's line per paper (suite.knobs): per dataset, the headline method's gap over the
baseline under the paper's recipe and under the fair one, every knob whose share of its change has
a 95 % interval that excludes zero, in both directions (a share over fewer than 3 seeds or without
spread is never named), marked `*` where it also holds after Holm's adjustment over the recipe's
knobs; where the named shares add up to more than the gap's change, what the others give back;
the higher-order remainder with its interval (or "0 by construction" where the design makes it an
identity, `shares.remainder_by_construction`), and the reproduction gap (the paper's printed
number − ours under the paper's recipe). Nothing is averaged over datasets, where opposite moves
would cancel."""

from __future__ import annotations

import math

from dmlbench.knobs import paired


def points(value: float) -> str:
    """Signed, one decimal; a value that rounds to zero is +0.0, never −0.0."""
    text = f"{value:+.1f}"
    return "+0.0" if text == "-0.0" else text


def _interval(row: dict) -> str:
    return "" if math.isnan(row["low"]) else f" [{points(row['low'])}, {points(row['high'])}]"


def excludes_zero(row: dict) -> bool:
    """A tested share (3 seeds or more, with spread) whose 95 % interval lies on one side of zero."""
    return row["untested"] is None and (row["low"] > 0 or row["high"] < 0)


def dataset_part(
    dataset: str,
    gap: dict,
    levels: tuple[float, float],
    labels: dict[str, str],
    reproduction: tuple[float, float] | None,
    remainder_is_identity: bool = False,
) -> str:
    """One dataset's clause. `gap`: `shares.method_shares` of the gap; `levels`: the gap's mean under
    the paper's and the fair recipe; `reproduction`: (printed, ours under the paper's recipe);
    `remainder_is_identity`: the remainder is 0 whatever the numbers."""
    paper, fair = levels
    text = f"{dataset}: gap {points(paper)} under the paper's recipe, {points(fair)} under the fair one"
    named = [
        f"{labels[row['knob']]} {points(row['effect'])}{_interval(row)}{' *' if row['significant'] else ''}"
        for row in sorted(gap["shares"], key=lambda r: -abs(r["effect"]))
        if excludes_zero(row)
    ]
    if named:
        text += f"; moved by {', '.join(named)}"
        named_sum = sum(row["effect"] for row in gap["shares"] if excludes_zero(row))
        change = fair - paper
        if abs(named_sum) > abs(change) + 0.05:  # a reader adds the named shares up: say what is left
            text += (
                f" (together {points(named_sum)}, more than the change of {points(change)}: the other "
                f"knobs' shares and the remainder give {points(change - named_sum)})"
            )
    else:
        untested = {row["untested"] for row in gap["shares"] if row["untested"]}
        largest = sorted(gap["shares"], key=lambda r: -abs(r["effect"]))[:3]
        why = f" ({', '.join(sorted(untested))}: not tested)" if untested else ""
        text += (
            (
                f"; no knob's share has an interval that excludes zero{why}; largest: "
                + ", ".join(f"{labels[r['knob']]} {points(r['effect'])}" for r in largest)
            )
            if largest
            else ""
        )
    if remainder_is_identity:
        text += "; higher-order remainder 0 by construction (these steps give every interaction wholly to the shares)"
    else:
        text += f"; higher-order remainder {points(gap['remainder']['effect'])}{_interval(gap['remainder'])}"
    if reproduction is not None:
        printed, ours = reproduction
        text += f"; reproduction gap {points(printed - ours)} (printed {printed:.1f}, ours {ours:.1f})"
    return text


def landing_line(paper: str, headline: str, baseline: str, parts: list[str]) -> str:
    """The paper's line: its datasets' clauses (`dataset_part`)."""
    return (
        f"{paper}: the gap of {headline} over {baseline} (Recall@1, points; knobs named where their "
        f"share's 95 % interval excludes zero, * where Holm's p < {paired.ALPHA} too) — " + ". ".join(parts)
    )
