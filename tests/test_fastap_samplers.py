"""The fastap supplement's samplers: whole classes, category pairs, VehicleID halves."""

from collections import Counter

import pytest
import torch

from dmlbench.core.errors import ConfigError
from dmlbench.methods import samplers


def catalogue(n_categories, classes_per_category, sizes=(2, 3, 5, 1, 4)):
    """labels and super-categories: class k of category c has sizes[k % len(sizes)] images."""
    labels, supers = [], []
    label = 0
    for c in range(n_categories):
        for k in range(classes_per_category):
            for _ in range(sizes[k % len(sizes)]):
                labels.append(label)
                supers.append(f"cat{c}")
            label += 1
    return labels, supers


def whole_classes_but_the_last(batch, labels, part_order=None):
    """Every class in the batch is whole, except possibly the last one drawn."""
    counts = Counter(labels[i] for i in batch)
    sizes = Counter(labels)
    order = list(dict.fromkeys(labels[i] for i in batch))
    return all(counts[c] == sizes[c] for c in order[:-1])


def test_category_pairs_two_categories_half_each_and_the_papers_epoch():
    labels, supers = catalogue(12, 8)  # 12 categories, as SOP
    sampler = samplers.build(
        "category_pairs", labels, 40, None, torch.Generator().manual_seed(0), supers=supers, per_pair=5
    )
    batches = list(sampler)
    assert len(batches) == len(sampler) == 66 * 5 == 330
    seen_pairs = Counter()
    for batch in batches:
        assert len(batch) == 40 and len(set(batch)) == 40
        first, second = batch[:20], batch[20:]
        cats = ({supers[i] for i in first}, {supers[i] for i in second})
        assert len(cats[0]) == len(cats[1]) == 1 and cats[0] != cats[1]
        assert whole_classes_but_the_last(first, labels) and whole_classes_but_the_last(second, labels)
        seen_pairs[frozenset(cats[0] | cats[1])] += 1
    assert set(seen_pairs.values()) == {5} and len(seen_pairs) == 66


def test_category_pairs_inshop_epoch_and_a_short_epoch():
    labels, supers = catalogue(23, 6)  # 23 categories, as In-Shop
    sampler = samplers.build("category_pairs", labels, 20, None, torch.Generator(), supers=supers, per_pair=2)
    assert len(sampler) == 253 * 2 == 506
    short = samplers.build("category_pairs", labels, 20, None, torch.Generator(), supers=supers, per_pair=2, batches=7)
    assert len(list(short)) == 7


def test_random_sampler_takes_whole_classes_until_full():
    labels, _ = catalogue(3, 10)
    sampler = samplers.build("random", labels, 24, None, torch.Generator().manual_seed(2), batches=50)
    for batch in sampler:
        assert len(batch) == 24 and len(set(batch)) == 24
        assert whole_classes_but_the_last(batch, labels)


def test_vehicleid_sampler_halves():
    labels, supers = [], []
    vehicle = 0
    for model, vehicles in (("m1", 6), ("m2", 3), ("none", 30)):
        for _ in range(vehicles):
            labels += [vehicle] * 4
            supers += [model] * 4
            vehicle += 1
    sampler = samplers.build("vehicleid", labels, 16, None, torch.Generator().manual_seed(0), supers=supers)
    batches = list(sampler)
    # Σ_c 2 N_c / M: m1 24 images → 3 batches, m2 12 images → 2 (rounded half up: 1.5)
    assert len(batches) == round(2 * 24 / 16) + max(1, round(2 * 12 / 16))
    for batch in batches:
        first, second = batch[:8], batch[8:]
        assert len({supers[i] for i in first}) == 1 and {supers[i] for i in first} != {"none"}
        assert {supers[i] for i in second} == {"none"}
        assert whole_classes_but_the_last(first, labels) and whole_classes_but_the_last(second, labels)


def test_category_pairs_refuses_data_without_categories():
    with pytest.raises(ConfigError, match="at least two super-categories"):
        samplers.build("category_pairs", [0, 0, 1, 1], 2, None, torch.Generator(), supers=["", "", "", ""])


def test_every_configured_sampler_exists():
    from conftest import full_plan

    plan = full_plan()
    for name, method in plan.methods.items():
        samplers.SAMPLERS.get(method.get("sampler", "m_per_class"))


def test_the_hard_strategy_is_category_pairs_or_vehicleid_halves_as_the_data_asks():
    """fastap's "hard" sampler: category pairs where every image has a category; a labelled model
    plus unlabelled vehicles where VehicleID's unlabelled ones are present (the same batches as the
    sampler named for it, on the same generator)."""
    labels, supers = catalogue(12, 8)
    hard = samplers.build("hard", labels, 40, None, torch.Generator().manual_seed(0), supers=supers, per_pair=5)
    pairs = samplers.build(
        "category_pairs", labels, 40, None, torch.Generator().manual_seed(0), supers=supers, per_pair=5
    )
    assert type(hard) is type(pairs) and list(hard) == list(pairs)
    labels, supers = [v for v in range(12) for _ in range(4)], ["m1"] * 24 + [samplers.VehicleIDBatches.UNLABELLED] * 24
    hard = samplers.build("hard", labels, 16, None, torch.Generator().manual_seed(0), supers=supers)
    halves = samplers.build("vehicleid", labels, 16, None, torch.Generator().manual_seed(0), supers=supers)
    assert type(hard) is type(halves) and list(hard) == list(halves)
