"""docs/knobs.md's statements about the knobs' shares and the remainder, each checked on a made-up
game run through the real paths (`paths.build`) and shares (`shares.method_shares`), against the
stated number and, where the docs compare with it, the precedence-constrained Shapley value by
brute force (the mean over every order the `needs` allow of a knob's marginal change)."""

import itertools

import numpy as np
import pytest

from dmlbench.knobs import landing, paths, shares


def recipe_of(knobs: list[str], needs: dict) -> dict:
    built = paths.build(knobs, needs)
    return {
        "knobs": [{"name": k} for k in knobs],
        "cumulative": [s.name for s in built.cumulative],
        "alone": {k: [a.name, b.name] for k, (a, b) in built.alone.items()},
        "back": {k: [a.name, b.name] for k, (a, b) in built.back.items()},
        "moved": {s.name: list(s.moved) for s in built.steps},
    }


def game(terms: dict[frozenset, float]):
    """v(S) = 60 + Σ_{T ⊆ S} m(T)."""
    return lambda moved: 60.0 + sum(m for term, m in terms.items() if term <= moved)


def measured(recipe: dict, value, seeds: int = 4) -> dict:
    """Each knob's share and the remainder from every step's number (a seed offset, no noise)."""
    offsets = np.random.default_rng(5).normal(0.0, 2.0, seeds)
    values = {
        step: {s: value(frozenset(moved)) + offsets[s] for s in range(seeds)} for step, moved in recipe["moved"].items()
    }
    result = shares.method_shares(recipe, values)
    return {**{r["knob"]: r["effect"] for r in result["shares"]}, "remainder": result["remainder"]["effect"]}


def precedence_shapley(knobs: list[str], needs: dict, value) -> dict[str, float]:
    feasible = [
        o for o in itertools.permutations(knobs) if all(o.index(n) < o.index(k) for k in needs for n in needs[k])
    ]
    return {
        k: sum(value(frozenset(o[: o.index(k) + 1])) - value(frozenset(o[: o.index(k)])) for o in feasible)
        / len(feasible)
        for k in knobs
    }


KNOBS, NEEDS = ["data", "selection", "batch"], {"selection": ("data",)}


def test_pair_terms_with_needs_go_wholly_to_the_needing_knob_and_half_each_otherwise():
    """data×selection (selection needs data): all to selection, as the precedence-constrained
    Shapley value gives it; data×batch and selection×batch: half each, where that value splits them
    by the orders the needs allow. The remainder is 0."""
    a = {"data": -4.0, "selection": 1.0, "batch": 2.0}
    b = {("data", "selection"): 3.0, ("data", "batch"): -1.0, ("selection", "batch"): 1.2}
    terms = {frozenset([k]): v for k, v in a.items()} | {frozenset(p): v for p, v in b.items()}
    found = measured(recipe_of(KNOBS, NEEDS), game(terms))
    assert found["data"] == pytest.approx(-4.0 + (-1.0) / 2)
    assert found["selection"] == pytest.approx(1.0 + 3.0 + 1.2 / 2)
    assert found["batch"] == pytest.approx(2.0 - 1.0 / 2 + 1.2 / 2)
    assert found["remainder"] == pytest.approx(0.0, abs=1e-9)
    # the needs allow three orders (data before selection): batch comes before data in one, after
    # selection in one, so Shapley splits data×batch 1/3 : 2/3 and selection×batch 2/3 : 1/3
    shapley = precedence_shapley(KNOBS, NEEDS, game(terms))
    assert shapley["data"] - found["data"] == pytest.approx((1 / 3 - 1 / 2) * -1.0)
    assert shapley["selection"] - found["selection"] == pytest.approx((2 / 3 - 1 / 2) * 1.2)
    assert shapley["batch"] - found["batch"] == pytest.approx((2 / 3 - 1 / 2) * -1.0 + (1 / 3 - 1 / 2) * 1.2)


def test_a_three_way_term_among_free_knobs_gives_each_half_and_leaves_minus_half():
    """The Shapley value gives each t/3; the shares give t/2 each and the remainder −t/2."""
    knobs, t = ["batch", "optimiser", "input"], 6.0
    found = measured(recipe_of(knobs, {}), game({frozenset(knobs): t}))
    assert [found[k] for k in knobs] == pytest.approx([t / 2] * 3)
    assert found["remainder"] == pytest.approx(-t / 2)
    assert precedence_shapley(knobs, {}, game({frozenset(knobs): t})) == pytest.approx({k: t / 3 for k in knobs})


def test_a_three_way_term_with_needs_leaves_no_remainder_yet_may_differ_from_shapley():
    """data, selection, batch (selection needs data): data 0, selection t/2, batch t/2, remainder 0,
    where the precedence-constrained Shapley value gives selection 2t/3 and batch t/3; along a chain
    (schedule needs selection needs data) the schedule takes all of it, as Shapley does."""
    t = 6.0
    found = measured(recipe_of(KNOBS, NEEDS), game({frozenset(KNOBS): t}))
    assert [found[k] for k in KNOBS] == pytest.approx([0.0, t / 2, t / 2])
    assert found["remainder"] == pytest.approx(0.0, abs=1e-9)
    assert precedence_shapley(KNOBS, NEEDS, game({frozenset(KNOBS): t})) == pytest.approx(
        {"data": 0.0, "selection": 2 * t / 3, "batch": t / 3}
    )
    chain, chain_needs = ["data", "selection", "schedule"], {"selection": ("data",), "schedule": ("selection",)}
    found = measured(recipe_of(chain, chain_needs), game({frozenset(chain): t}))
    assert [found[k] for k in chain] == pytest.approx([0.0, 0.0, t])
    assert found["remainder"] == pytest.approx(0.0, abs=1e-9)


def test_the_term_weights_give_every_share_of_any_game():
    """The general rule: share_i = Σ_{T∋i} w_i(T)·m(T) and remainder = Σ_T (1 − Σ w)·m(T), on a game
    with a random term for every set of five knobs, two of which need others."""
    knobs = ["batch", "input", "data", "selection", "evaluation"]
    needs = {"selection": ("data",), "evaluation": ("data",)}
    rng = np.random.default_rng(11)
    terms = {frozenset(t): float(rng.normal()) for n in range(1, 6) for t in itertools.combinations(knobs, n)}
    recipe = recipe_of(knobs, needs)
    found = measured(recipe, game(terms))
    weights = shares.term_weights(recipe)
    for knob in knobs:
        expected = terms[frozenset([knob])] + sum(w[knob] * terms[t] for t, w in weights.items() if knob in t)
        assert found[knob] == pytest.approx(expected)
    left = sum((1 - sum(w.values())) * terms[t] for t, w in weights.items())
    assert found["remainder"] == pytest.approx(left)
    assert not shares.remainder_by_construction(recipe)


def test_a_remainder_that_is_zero_by_construction_is_said_so():
    """Three knobs of which two need the third (the demo's data, selection, evaluation): every
    term's weights sum to 1, so the remainder is 0 for any numbers and the landing line says so."""
    recipe = recipe_of(["data", "selection", "evaluation"], {"selection": ("data",), "evaluation": ("data",)})
    assert shares.remainder_by_construction(recipe)
    assert not shares.remainder_by_construction(recipe_of(["batch", "optimiser", "input"], {}))
    terms = {frozenset(["data"]): 5.0, frozenset(["data", "selection", "evaluation"]): -2.0}
    values = {step: {s: game(terms)(frozenset(m)) + s for s in range(4)} for step, m in recipe["moved"].items()}
    gap = shares.method_shares(recipe, values)
    labels = {"data": "data trained on", "selection": "epoch selection", "evaluation": "evaluation"}
    text = landing.dataset_part("CUB", gap, (0.0, 3.0), labels, None, remainder_is_identity=True)
    assert "remainder 0 by construction" in text and "remainder +0.0" not in text


def test_named_shares_that_add_up_to_more_than_the_change_say_what_the_others_give_back():
    rows = [
        {"knob": "data", "effect": 4.0, "low": 3.0, "high": 5.0, "untested": None, "significant": True},
        {"knob": "batch", "effect": 3.0, "low": 2.0, "high": 4.0, "untested": None, "significant": True},
        {"knob": "input", "effect": -5.0, "low": -9.0, "high": 1.0, "untested": None, "significant": False},
    ]
    remainder = {"effect": 0.0, "low": -0.5, "high": 0.5}
    text = landing.dataset_part(
        "CUB", {"shares": rows, "remainder": remainder}, (1.0, 3.0), {k: k for k in ("data", "batch", "input")}, None
    )
    assert "moved by data +4.0 [+3.0, +5.0] *, batch +3.0 [+2.0, +4.0] *" in text
    assert "(together +7.0, more than the change of +2.0: the other knobs' shares and the remainder give -5.0)" in text


def test_a_pairwise_interaction_is_shown_where_four_steps_measure_it():
    """batch × optimiser: the steps paper, only-batch, only-optimiser and upto-optimiser are exactly
    ∅, {batch}, {optimiser}, {batch, optimiser}, so their interaction b is measured; a pair that no
    four steps span (here, with a third knob between them on the path) is not shown."""
    from dmlbench.knobs import interactions

    knobs, b = ["batch", "optimiser", "input"], 1.7
    terms = {frozenset(["batch"]): 2.0, frozenset(["optimiser"]): -1.0, frozenset(["batch", "optimiser"]): b}
    recipe = recipe_of(knobs, {})
    values = {step: {s: game(terms)(frozenset(m)) + 0.1 * s for s in range(4)} for step, m in recipe["moved"].items()}
    found = {row["pair"]: row for row in interactions.measured(recipe, values, knobs)}
    assert (
        found[("batch", "optimiser")]["effect"] == pytest.approx(b)
        and found[("batch", "optimiser")]["background"] == []
    )
    assert ("batch", "input") not in found or found[("batch", "input")]["effect"] == pytest.approx(0.0, abs=1e-9)
    lines = interactions.markdown(list(found.values()), {k: k for k in knobs}, "MS")
    assert "| batch × optimiser | none | +1.7 |" in lines
