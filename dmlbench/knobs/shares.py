"""Each knob's share of the change from a paper's recipe to the fair one, whatever the knobs'
order: the mean of its *forward* effect (moved from the paper's recipe, against the step that
moves only what it needs) and its *backward* effect (reverted from the fair recipe, with the knobs
that need it), seed by seed.

Written as interaction terms, v(S) = Σ_{T⊆S} m(T) (m({i}) a knob's own effect, m(T) the
interaction of the knobs of T), knob i's share is Σ_{T∋i} w_i(T)·m(T) with w_i(T) = ½·[T within
its forward step] + ½·[T within its backward step] (`term_weights`): its own effect whole; a pair
term half to each knob where neither needs the other, wholly to the needing knob where one does; a
three-way term among free knobs half to each. The *remainder*, total − Σ shares, is
Σ_T (1 − Σ_{i∈T} w_i(T))·m(T): never a pair term's, so where the weights of every term sum to 1
it is 0 whatever the numbers (`remainder_by_construction`). Without `needs` and with interactions
at most in pairs the shares are the Shapley values; docs/knobs.md says when else they are and are
not. Shares are signed (a knob may widen what others close)."""

from __future__ import annotations

import itertools

from dmlbench.knobs import paired


def term_weights(recipe: dict) -> dict[frozenset, dict[str, float]]:
    """For every interaction term of two or more of the recipe's knobs, each of its knobs' weight
    in that knob's share: ½ where the term lies within the knob's forward step, plus ½ where it
    lies within its backward step (the steps that move the knob; their bases do not)."""
    knobs = [k["name"] for k in recipe["knobs"]]
    forward = {k: set(recipe["moved"][recipe["alone"][k][0]]) for k in knobs}
    backward = {k: set(recipe["moved"][recipe["back"][k][0]]) for k in knobs}
    return {
        frozenset(term): {k: 0.5 * (set(term) <= forward[k]) + 0.5 * (set(term) <= backward[k]) for k in term}
        for size in range(2, len(knobs) + 1)
        for term in itertools.combinations(knobs, size)
    }


def remainder_by_construction(recipe: dict) -> bool:
    """Whether every interaction term's weights sum to 1, so that the shares hold the whole change
    and the remainder is 0 for any numbers: an identity of the design, not a measurement."""
    return all(abs(sum(weights.values()) - 1.0) < 1e-12 for weights in term_weights(recipe).values())


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
