"""Pairwise interactions that a recipe's steps measure (suite.knobs; docs/knobs.md): for knobs i
and j, v(S + i + j) − v(S + i) − v(S + j) + v(S), seed by seed, wherever four steps of the paths
are exactly those sets for some background S (the fewest other knobs moved first). Most pairs have
no such four steps: they are not shown, and their interaction stays inside the shares (half to
each knob where neither needs the other, `shares.term_weights`)."""

from __future__ import annotations

import itertools

from dmlbench.knobs import paired


def measured(recipe: dict, values: dict[str, dict[int, float]], knobs: list[str]) -> list[dict]:
    """Each pair of `knobs` whose interaction four steps measure: the pair, the background knobs,
    and the interaction's mean, 95 % interval and test over the seeds all four ran."""
    steps = {frozenset(moved): name for name, moved in recipe["moved"].items()}
    found = []
    for i, j in itertools.combinations(knobs, 2):
        backgrounds = sorted((moved - {i, j} for moved in steps if {i, j} <= moved), key=lambda s: (len(s), sorted(s)))
        for base in backgrounds:
            corners = [base | {i, j}, base | {i}, base | {j}, base]
            if all(corner in steps for corner in corners):
                both, only_i, only_j, none = (values[steps[c]] for c in corners)
                seeds = sorted(set(both) & set(only_i) & set(only_j) & set(none))
                term = {s: both[s] - only_i[s] - only_j[s] + none[s] for s in seeds}
                found.append({"pair": (i, j), "background": sorted(base), **paired.of_differences(term)})
                break
    return found


def markdown(found: list[dict], labels: dict[str, str], method: str) -> list[str]:
    """The pairs' lines under a recipe's tables (nothing where no four steps measure a pair)."""
    if not found:
        return []
    lines = [
        f"Pairwise interactions of {method}'s knobs with the three largest shares, where four steps measure "
        "them (v(S+i+j) − v(S+i) − v(S+j) + v(S), points; S the knobs moved in all four):",
        "",
        "| knobs | S | interaction |",
        "|---|---|---|",
    ]
    for row in found:
        i, j = row["pair"]
        spread = "" if row["low"] != row["low"] else f" [{row['low']:+.1f}, {row['high']:+.1f}]"
        background = ", ".join(labels[k] for k in row["background"]) or "none"
        lines.append(f"| {labels[i]} × {labels[j]} | {background} | {row['effect']:+.1f}{spread} |")
    return lines + [""]
