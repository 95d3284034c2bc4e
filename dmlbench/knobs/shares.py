"""Each knob's share of the change from a paper's recipe to the fair one, whatever the knobs'
order: the mean of its *forward* effect (moved from the paper's recipe, against the step that
moves only what it needs) and its *backward* effect (reverted from the fair recipe, with the knobs
that need it), seed by seed.

Where no knob needs another and the knobs interact at most in pairs, v(S) = Σ_{i∈S} a_i +
Σ_{i<j∈S} b_ij: the forward effect is a_i, the backward a_i + Σ_j b_ij, and their mean
a_i + ½ Σ_j b_ij is knob i's Shapley value exactly; the shares then sum to the total. What they
leave of the total is the *remainder*: interactions of three or more knobs and, with `needs`, the
orders a path cannot take. Shares are signed (a knob may widen what others close)."""

from __future__ import annotations

from dmlbench.knobs import paired


def _difference(values: dict, step: str, base: str) -> dict[int, float]:
    seeds = sorted(set(values[step]) & set(values[base]))
    return {s: values[step][s] - values[base][s] for s in seeds}


def seed_shares(recipe: dict, values: dict[str, dict[int, float]]) -> dict[str, dict]:
    """Per knob: its forward and backward effect and its share, each seed → points."""
    out = {}
    for knob, (step, base) in recipe["alone"].items():
        forward = _difference(values, step, base)
        backward = _difference(values, *recipe["back"][knob])
        seeds = sorted(set(forward) & set(backward))
        out[knob] = {
            "forward": forward,
            "backward": backward,
            "share": {s: (forward[s] + backward[s]) / 2 for s in seeds},
        }
    return out


def method_shares(recipe: dict, values: dict[str, dict[int, float]]) -> dict:
    """`values[step][seed]` (a method's numbers, or a gap's): each knob's share with its interval
    and Holm-adjusted test, its forward and backward means, the total and the remainder."""
    fair = recipe["cumulative"][-1] if recipe["cumulative"] else "paper"
    total = _difference(values, fair, "paper")
    per_knob = seed_shares(recipe, values)
    rows = []
    for knob, parts in per_knob.items():
        rows.append(
            {
                "knob": knob,
                **paired.of_differences(parts["share"]),
                "forward": paired.of_differences(parts["forward"])["effect"],
                "backward": paired.of_differences(parts["backward"])["effect"],
            }
        )
    paired.holm(rows)
    seeds = set(total).intersection(*(set(p["share"]) for p in per_knob.values())) if per_knob else set(total)
    remainder = {s: total[s] - sum(p["share"][s] for p in per_knob.values()) for s in sorted(seeds)}
    return {"shares": rows, "total": paired.of_differences(total), "remainder": paired.of_differences(remainder)}


def gap_values(head: dict[str, dict[int, float]], base: dict[str, dict[int, float]]) -> dict[str, dict[int, float]]:
    """The headline method's gap over the baseline at every step, seed by seed (the seeds both ran)."""
    return {
        step: {s: head[step][s] - base[step][s] for s in sorted(set(head[step]) & set(base.get(step, {})))}
        for step in head
    }
