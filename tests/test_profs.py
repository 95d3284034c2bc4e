"""PROFS (profs paper, Algorithm 1): cycles, representatives, proximal term, HNCM, M, pair
restriction, and resume inside a cycle."""

import copy
import dataclasses
import json
import math

import numpy as np
import profs_reference
import pytest
import torch
import torch.nn.functional as F
from profs_reference import test_reference_counts_on_a_hand_batch  # noqa: F401 (the reference's own hand check, collected here)
from torch import nn

from dmlbench.config.plan import Plan
from dmlbench.data.prepare import prepare
from dmlbench.methods import losses, miners
from dmlbench.methods.criterion import Criterion
from dmlbench.run_config import RunConfig
from dmlbench.training import schemes
from dmlbench.training.schemes.profs import hardest_classes, iterations_per_cycle

from conftest import CONFIG_DIR

LABELS = [c for c in range(10) for _ in range(6)]  # 10 classes × 6 images


def profs_cfg(**scheme):
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    cfg = plan.resolve(plan.find_run("suite.baselines", "cub", "ms", 0))
    cfg["scheme"].update(name="profs", **scheme)
    cfg["batch"].update(size=12, per_class=3)
    cfg["model"]["embedding_dim"] = 8
    return cfg


def build(cfg, parameters=(), criterion=None):
    criterion = criterion or Criterion(cfg["method"], num_classes=10, embedding_dim=8)
    return schemes.build(RunConfig.from_dict(cfg), LABELS, None, list(parameters), criterion)


def planned(scheme, steps, seed=0):
    """The steps of one epoch with the representatives in force when each was drawn."""
    out = []
    for step in scheme.plan(torch.Generator().manual_seed(seed), steps):
        out.append((step, scheme.representatives.clone()))
    return out


def test_batches_hold_only_this_cycles_representatives():
    scheme = build(profs_cfg(iterations=4))
    steps = planned(scheme, 24)
    cycles = {}
    for number, (step, reps) in enumerate(steps):
        cycle = number // 4
        assert step.starts_cycle == (number % 4 == 0)
        cycles.setdefault(cycle, reps)
        assert torch.equal(reps, cycles[cycle])  # representatives fixed within a cycle
        indices = torch.tensor(step.indices)
        flagged = indices[step.representatives]
        others = indices[~step.representatives]
        assert set(flagged.tolist()) <= set(cycles[cycle].tolist())
        assert not set(others.tolist()) & set(cycles[cycle].tolist())
        classes = [LABELS[i] for i in flagged.tolist()]
        assert len(classes) == len(set(classes))  # one representative per class in the batch
        assert len(step.indices) == len(set(step.indices)) == 12


def test_representatives_rotate_through_each_class_before_starting_over():
    scheme = build(profs_cfg(iterations=1))
    reps = [r for _, r in planned(scheme, 12)]
    for c in range(10):
        first_round = [int(r[c]) for r in reps[:6]]
        assert sorted(first_round) == [i for i, y in enumerate(LABELS) if y == c]
        assert int(reps[6][c]) in first_round  # the seventh cycle starts a new round


def test_proximal_gradient_is_lambda_times_distance_to_the_cycle_start():
    weight = nn.Parameter(torch.randn(5, 3))
    scheme = build(profs_cfg(iterations=3, lam=0.25), [weight])
    batches = iter(scheme.batches(torch.Generator().manual_seed(0), 9))
    anchors = []
    for number in range(9):
        next(batches)
        scheme.begin_step()
        anchors.append(scheme.target[0].clone())
        if number % 3 == 0:  # θ(k) is the parameters at the cycle's first step
            assert torch.equal(anchors[-1], weight.detach())
        weight.grad = None
        scheme.penalty().backward()
        assert torch.allclose(weight.grad, 0.25 * (weight.detach() - anchors[-1]))
        with torch.no_grad():
            weight += torch.randn_like(weight)  # an update
    changes = [i for i in range(1, 9) if not torch.equal(anchors[i], anchors[i - 1])]
    assert changes == [3, 6]


def test_previous_cycle_anchor_lags_one_cycle():
    weight = nn.Parameter(torch.zeros(2))
    scheme = build(profs_cfg(iterations=1, anchor="previous_cycle_start", lam=1.0), [weight])
    batches = iter(scheme.batches(torch.Generator().manual_seed(0), 3))
    seen = []
    for value in (1.0, 2.0, 3.0):
        next(batches)
        with torch.no_grad():
            weight.fill_(value)
        scheme.begin_step()
        seen.append(float(scheme.target[0][0]))
    assert seen == [1.0, 1.0, 2.0]


def test_hncm_picks_the_classes_a_brute_force_search_picks():
    scheme = build(profs_cfg(hncm=True, iterations=100))
    generator = torch.Generator().manual_seed(3)
    table = F.normalize(torch.randn(10, 8, generator=generator), dim=1)
    scheme.table, scheme.known = table.clone(), torch.ones(10, dtype=torch.bool)
    scheme.known[7] = False  # never stored yet: not ranked
    for trial in range(20):
        order = scheme._classes(torch.Generator().manual_seed(trial))
        seed = order[0]
        if seed == 7:
            continue
        sims = {
            c: sum(float(table[seed][d]) * float(table[c][d]) for d in range(8))
            for c in range(10)
            if c not in (seed, 7)
        }
        brute = sorted(sims, key=lambda c: -sims[c])
        assert order[1 : 1 + len(brute)] == brute
        assert sorted(order) == list(range(10))
    assert hardest_classes(table, torch.zeros(10, dtype=torch.bool), 0, 4) == []


def test_hncm_table_stores_representative_embeddings():
    scheme = build(profs_cfg(hncm=True, iterations=5))
    for step in scheme.batches(torch.Generator().manual_seed(0), 3):
        plan = scheme.begin_step()
        embeddings = torch.randn(len(plan.indices), 8)
        scheme.end_step(plan, embeddings)
        for position in plan.representatives.nonzero().flatten().tolist():
            c = LABELS[plan.indices[position]]
            assert torch.allclose(scheme.table[c], F.normalize(embeddings[position], dim=0))


@pytest.mark.parametrize(
    "rho,batch,per_class,classes", [(6, 128, 2, 11318), (6, 128, 4, 100), (6, 128, 2, 98), (0.5, 60, 5, 7)]
)
def test_iterations_per_cycle_follow_the_formula(rho, batch, per_class, classes):
    p = batch / (per_class * classes)
    m = 1
    while m * p < rho - 1e-12:
        m += 1
    assert iterations_per_cycle(rho, batch, per_class, classes) == m


def test_cycles_last_m_iterations_from_rho():
    scheme = build(profs_cfg(rho=6))  # L = 10, I = 3, B = 12: M = ceil(6 · 30 / 12) = 15
    assert scheme.iterations == math.ceil(6 * 3 * 10 / 12)
    starts = [n for n, (step, _) in enumerate(planned(scheme, 40)) if step.starts_cycle]
    assert starts == [0, 15, 30]


def ms_brute(sim, labels, allowed, alpha=2.0, beta=50.0, lam=0.5):
    total = 0.0
    n = len(labels)
    for i in range(n):
        pos = [sim[i][j] for j in range(n) if j != i and labels[j] == labels[i] and allowed[i][j]]
        neg = [sim[i][j] for j in range(n) if labels[j] != labels[i] and allowed[i][j]]
        if pos:
            total += math.log(1 + sum(math.exp(-alpha * (s - lam)) for s in pos)) / alpha
        if neg:
            total += math.log(1 + sum(math.exp(beta * (s - lam)) for s in neg)) / beta
    return total / n


def lifted_brute(dist, labels, allowed, margin=1.0):
    n, total, count = len(labels), 0.0, 0
    for i in range(n):
        for j in range(i + 1, n):
            if labels[i] != labels[j] or not allowed[i][j]:
                continue
            count += 1
            terms = [math.exp(margin - dist[i][k]) for k in range(n) if labels[k] != labels[i] and allowed[i][k]]
            terms += [math.exp(margin - dist[j][k]) for k in range(n) if labels[k] != labels[j] and allowed[j][k]]
            if terms:
                total += max(0.0, math.log(sum(terms)) + dist[i][j]) ** 2
    return total / (2 * count)


def test_lifted_and_ms_drop_exactly_the_pairs_between_non_representatives():
    scheme = build(profs_cfg(iterations=4))
    next(iter(scheme.batches(torch.Generator().manual_seed(1), 1)))
    plan = scheme.begin_step()
    labels = torch.tensor([LABELS[i] for i in plan.indices])
    reps = plan.representatives.tolist()
    allowed = [[reps[i] or reps[j] for j in range(len(reps))] for i in range(len(reps))]
    assert plan.pairs.tolist() == allowed
    x = torch.randn(len(labels), 16, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    unit = F.normalize(x, dim=1)
    sim = (unit @ unit.T).tolist()
    dist = torch.sqrt(torch.clamp(2 - 2 * unit @ unit.T, min=1e-12)).tolist()
    ms = losses.build("multi_similarity", alpha=2.0, beta=50.0, gamma=0.5)
    lifted = losses.build("lifted_structure", margin=1.0)
    assert float(ms(x, labels, pairs=plan.pairs)) == pytest.approx(ms_brute(sim, labels.tolist(), allowed), rel=1e-9)
    assert float(lifted(x, labels, pairs=plan.pairs)) == pytest.approx(
        lifted_brute(dist, labels.tolist(), allowed), rel=1e-9
    )
    everything = [[True] * len(reps) for _ in reps]
    assert float(ms(x, labels)) == pytest.approx(ms_brute(sim, labels.tolist(), everything), rel=1e-9)
    assert float(ms(x, labels)) != pytest.approx(float(ms(x, labels, pairs=plan.pairs)))


def test_pair_restriction_needs_a_pair_loss():
    from dmlbench.core.errors import ConfigError

    cfg = profs_cfg()
    cfg["method"] = {
        "name": "npair",
        "loss": {"name": "npair", "l2_reg": 0.002},
        "miner": None,
        "sampler": "m_per_class",
    }
    with pytest.raises(ConfigError, match="scheme.pairs: all"):
        build(cfg)
    build(copy.deepcopy(dict(cfg, scheme=dict(cfg["scheme"], pairs="all"))))


def test_softtriple_hncm_ranks_classes_by_their_centres():
    cfg = profs_cfg(hncm=True, representatives="none", iterations=1, anchor="previous_cycle_start")
    cfg["method"] = {
        "name": "softtriple",
        "miner": None,
        "sampler": "shuffle",
        "loss": {"name": "softtriple", "centres_per_class": 3},
    }
    criterion = Criterion(cfg["method"], num_classes=10, embedding_dim=8)
    scheme = build(cfg, list(criterion.parameters()), criterion)
    vectors = criterion.loss.class_vectors().detach()
    step = next(iter(scheme.batches(torch.Generator().manual_seed(0), 1)))
    classes = list(dict.fromkeys(LABELS[i] for i in step))
    seed = classes[0]
    ranking = sorted((c for c in range(10) if c != seed), key=lambda c: -float(vectors[c] @ vectors[seed]))
    assert classes[1:] == ranking[: len(classes) - 1]


class StopAfterFirstEpoch(Exception):
    pass


def test_kill_inside_a_cycle_and_resume_gives_the_uninterrupted_run(tmp_path):
    from dmlbench import models
    from dmlbench.data import manifest as manifest_io
    from dmlbench.evaluation.model_eval import evaluate_model
    from dmlbench.training.train import train

    manifest = tmp_path / "data" / "fixture" / "cub" / "manifest.csv"
    prepare(
        "cub", "fixture", tmp_path / "data", manifest, fixture_size={"n_classes": 8, "per_class": 6, "image_size": 40}
    )
    cfg = profs_cfg(hncm=True, iterations=7)  # 5 iterations an epoch: the cycle spans epochs
    cfg["data"] = {"manifest": str(manifest)}  # files decoded per image (no store)
    cfg["model"]["embedding_dim"] = 16
    cfg.update(epochs=3, batches_per_epoch=5)

    train(cfg, tmp_path / "whole", log=lambda m: None)

    def stop(message):
        if message.startswith("epoch 1/"):
            raise StopAfterFirstEpoch

    with pytest.raises(StopAfterFirstEpoch):
        train(cfg, tmp_path / "killed", log=stop)
    state = torch.load(tmp_path / "killed" / "checkpoint.pt", weights_only=True)
    assert state["epochs_done"] == 1 and state["scheme"]["planned_in_cycle"] == 5
    logs = []
    train(cfg, tmp_path / "killed", log=logs.append)
    assert any("resuming" in line for line in logs)

    history = lambda d: [json.loads(line)["loss"] for line in (d / "epochs.jsonl").read_text().splitlines()]
    assert history(tmp_path / "killed") == history(tmp_path / "whole")
    table = manifest_io.read(manifest)

    def metrics(run):
        saved = torch.load(tmp_path / run / "model.pt", weights_only=True)
        typed = RunConfig.from_dict(cfg)
        model = models.build(dataclasses.replace(typed.model, pretrained=False))
        model.load_state_dict(saved["model"])
        return evaluate_model(model, table, manifest.parent, typed, torch.device("cpu"))

    assert metrics("killed") == metrics("whole")


def suite_triplets(x, labels, pairs, loss):
    """The triplets the hardest miner gives the loss inside its own forward (recorded on the way)."""
    miner = miners.build("hardest", negatives="per_positive")
    seen = []

    def recording(batch):
        mined = miner(batch)
        seen.append(mined.triplets)
        return mined

    value = loss(x, labels, miner=recording, pairs=pairs)
    a, p, n = seen[0]
    return sorted(zip(a.tolist(), p.tolist(), n.tolist())), value


def structured_batch():
    """A step drawn by the scheme: classes in blocks, each led by its representative."""
    scheme = build(profs_cfg(iterations=4, pairs="anchored"))
    step = next(iter(scheme.plan(torch.Generator().manual_seed(3), 1)))
    labels = torch.tensor([LABELS[i] for i in step.indices])
    return scheme, labels, step.representatives, step.pairs


def shuffled_batch(scheme):
    """No class structure: uneven classes in random order, some without a representative."""
    g = torch.Generator().manual_seed(11)
    labels = torch.randint(0, 5, (17,), generator=g)
    reps = torch.zeros(17, dtype=torch.bool)
    for c in labels.unique().tolist()[:-1]:
        members = (labels == c).nonzero(as_tuple=True)[0]
        reps[members[torch.randint(len(members), (1,), generator=g)]] = True
    return labels, reps, scheme.pair_mask(reps)


@pytest.mark.parametrize("structured", [True, False])
def test_hard_mined_profs_tuples_are_anchored_at_the_representatives_as_the_brute_force(structured):
    scheme, labels, reps, pairs = structured_batch()
    if not structured:
        labels, reps, pairs = shuffled_batch(scheme)
    x = torch.randn(len(labels), 8, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    unit = F.normalize(x, dim=1)
    sim = (unit @ unit.T).numpy()
    expected = profs_reference.mined_pairs(sim, labels.tolist(), reps.tolist())
    contrastive = losses.build("contrastive_distance", margin=1.0)
    got, value = suite_triplets(x, labels, pairs, contrastive)
    assert got == sorted(expected)
    assert {a for a, _, _ in got} == set(reps.nonzero(as_tuple=True)[0].tolist())
    positives, negatives = profs_reference.pair_multisets(expected)
    for anchor in {a for a, _ in positives}:  # section 5.3: as many hard negatives as positives
        assert sum(c for (a, _), c in positives.items() if a == anchor) == sum(
            c for (a, _), c in negatives.items() if a == anchor
        )
    d = torch.sqrt(torch.clamp(2 - 2 * unit @ unit.T, min=1e-12)).numpy()
    brute = sum(d[a, j] ** 2 for a, j in positives) + sum(max(0.0, 1.0 - d[a, j]) ** 2 for a, j in negatives)
    assert float(value) == pytest.approx(brute / (len(positives) + len(negatives)), rel=1e-9)
    for name in ("triplet", "margin"):
        assert suite_triplets(x, labels, pairs, losses.build(name))[0] == sorted(expected)


def test_symmetric_pairs_of_lifted_and_ms_are_the_brute_force_mask():
    scheme = build(profs_cfg(iterations=4))
    step = next(iter(scheme.plan(torch.Generator().manual_seed(3), 1)))
    labels = [LABELS[i] for i in step.indices]
    expected = profs_reference.representative_pair_mask(labels, step.representatives.tolist())
    assert (step.pairs.numpy() & ~np.eye(len(labels), dtype=bool)).tolist() == expected.tolist()
