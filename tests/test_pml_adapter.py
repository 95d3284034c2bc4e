"""pytorch-metric-learning's losses as methods (`pml:<Class>`, docs/methods.md): the adapter's value is
PML's own call on the same batch, a suite miner's kept pairs reach PML as its `indices_tuple`, bad
names and values are refused when the plan loads, and the smoke fair table trains one."""

from __future__ import annotations

import re
import subprocess
import sys

import pandas as pd
import pytest
import torch
from conftest import CONFIG_DIR, REPO, python_env

from dmlbench.config.plan import Plan
from dmlbench.core.errors import ConfigError
from dmlbench.methods import declared, losses, miners, plugin_code
from dmlbench.methods.criterion import Criterion
from dmlbench.methods.pairs import PairBatch

pml_losses = pytest.importorskip("pytorch_metric_learning.losses")
from pytorch_metric_learning import distances as pml_distances  # noqa: E402
from pytorch_metric_learning import reducers as pml_reducers  # noqa: E402

PAGE = REPO / "docs" / "howto" / "compare-your-method.md"


def _batch(seed: int = 0):
    torch.manual_seed(seed)
    return torch.randn(24, 16, dtype=torch.float64, requires_grad=True), torch.arange(6).repeat_interleave(4)


@pytest.mark.parametrize(
    "name, params, theirs",
    [
        ("pml:CircleLoss", {"m": 0.25, "gamma": 80}, lambda: pml_losses.CircleLoss(m=0.25, gamma=80)),
        ("pml:SupConLoss", {"temperature": 0.1}, lambda: pml_losses.SupConLoss(temperature=0.1)),
        ("pml:NTXentLoss", {"temperature": 0.07}, lambda: pml_losses.NTXentLoss(temperature=0.07)),
        (
            "pml:ContrastiveLoss",
            {"pos_margin": 1.0, "neg_margin": 0.5, "distance": "CosineSimilarity", "reducer": "MeanReducer"},
            lambda: pml_losses.ContrastiveLoss(
                pos_margin=1.0,
                neg_margin=0.5,
                distance=pml_distances.CosineSimilarity(),
                reducer=pml_reducers.MeanReducer(),
            ),
        ),
        (
            "pml:TripletMarginLoss",
            {"margin": 0.1, "distance": {"name": "LpDistance", "p": 1}},
            lambda: pml_losses.TripletMarginLoss(margin=0.1, distance=pml_distances.LpDistance(p=1)),
        ),
    ],
)
def test_the_adapters_value_and_gradient_are_pmls_own_call(name, params, theirs):
    embeddings, labels = _batch()
    ours = losses.build(name, **params)(embeddings, labels)
    (grad_ours,) = torch.autograd.grad(ours, embeddings)
    reference = theirs()(embeddings, labels)
    (grad_theirs,) = torch.autograd.grad(reference, embeddings)
    assert ours.item() == pytest.approx(reference.item(), rel=1e-12)
    assert torch.allclose(grad_ours, grad_theirs, rtol=1e-10, atol=1e-12)


def test_a_suite_miner_hands_exactly_the_pairs_it_keeps_to_a_pml_loss():
    embeddings, labels = _batch(1)
    miner = miners.build("multi_similarity", epsilon=0.1)
    kept = miner(PairBatch.from_embeddings(embeddings, labels))
    # the kept pairs written out one by one: (anchor, positive) and (anchor, negative), row-major
    pos = [(a, p) for a in range(24) for p in range(24) if kept.pos[a, p]]
    neg = [(a, n) for a in range(24) for n in range(24) if kept.neg[a, n]]
    assert 0 < len(pos) < int((labels[:, None] == labels[None, :]).sum()) - 24  # the miner dropped some
    indices = tuple(torch.tensor(column) for column in (*zip(*pos), *zip(*neg)))
    reference = pml_losses.CircleLoss(m=0.25, gamma=80)(embeddings, labels, indices_tuple=indices)
    ours = losses.build("pml:CircleLoss", m=0.25, gamma=80)(embeddings, labels, miner=miner)
    assert ours.item() == pytest.approx(reference.item(), rel=1e-12)
    unmined = losses.build("pml:CircleLoss", m=0.25, gamma=80)(embeddings, labels)
    assert ours.item() != pytest.approx(unmined.item())  # the miner changed what the loss saw


def test_a_triplet_miners_triplets_reach_pml_as_triplets():
    embeddings, labels = _batch(2)
    miner = miners.build("semihard")
    kept = miner(PairBatch.from_embeddings(embeddings, labels))
    assert kept.triplets is not None
    reference = pml_losses.TripletMarginLoss(margin=0.2)(embeddings, labels, indices_tuple=kept.triplets)
    ours = losses.build("pml:TripletMarginLoss", margin=0.2)(embeddings, labels, miner=miner)
    assert ours.item() == pytest.approx(reference.item(), rel=1e-12)


def test_a_loss_with_class_weights_gets_them_from_the_training_and_takes_no_miner():
    component = declared.components("loss")["pml:ArcFaceLoss"]
    assert component.needs == ("num_classes", "embedding_dim") and not component.takes_miner
    method = {"name": "arcface", "loss": {"name": "pml:ArcFaceLoss"}}
    method["code"] = plugin_code.digests(method)  # as the plan records it in the run's settings
    criterion = Criterion(method, num_classes=6, embedding_dim=16)
    assert criterion.loss.loss.W.shape == (16, 6)  # PML's weights: embedding size × classes
    embeddings, labels = _batch()
    torch.manual_seed(3)
    theirs = pml_losses.ArcFaceLoss(num_classes=6, embedding_size=16).double()
    theirs.W.data.copy_(criterion.loss.loss.W.data.double())
    assert criterion.double()(embeddings, labels).item() == pytest.approx(theirs(embeddings, labels).item())
    with pytest.raises(ConfigError, match=r"method x.miner: loss 'pml:ArcFaceLoss' takes no miner"):
        declared.check_method(
            {"loss": {"name": "pml:ArcFaceLoss"}, "miner": {"name": "multi_similarity"}, "sampler": "m_per_class"},
            "method x",
        )


@pytest.mark.parametrize(
    "loss, refusal",
    [
        ({"name": "pml:CircleLos"}, r"pytorch-metric-learning has no loss 'CircleLos' \(did you mean 'CircleLoss'\?\)"),
        (
            {"name": "pml:CircleLoss", "gama": 80},
            r"circle_vthm.loss.gama: .* has no parameter 'gama' \(did you mean 'gamma'\?\)",
        ),
        ({"name": "pml:CircleLoss", "m": "thirty"}, r"circle_vthm.loss.m: 'thirty' is not a float"),
        ({"name": "pml:CircleLoss", "distance": "LpDistance"}, r"requires the distance metric to be CosineSimilarity"),
        ({"name": "pml:CircleLoss", "reducer": "MeanReduce"}, r"'MeanReduce' is no pytorch-metric-learning class"),
        ({"name": "pml:MultipleLosses"}, r"is no loss of its own"),
        ({"name": "pml:CrossBatchMemory"}, r"loss 'pml:CrossBatchMemory' needs loss \(pytorch_metric_learning"),
    ],
)
def test_a_bad_pml_loss_is_refused_when_the_plan_loads_naming_the_file_and_key(tmp_path, loss, refusal):
    methods = tmp_path / "mine.yaml"
    entry = {"label": "Circle", "loss": loss, "sampler": "m_per_class"}
    import yaml

    methods.write_text(yaml.safe_dump({"methods": {"circle_vthm": entry}, "join": ["suite.baselines"]}))
    with pytest.raises(ConfigError, match=refusal):
        Plan.load(CONFIG_DIR, {"preset": "smoke", "methods_file": str(methods)})


def test_a_pml_losss_file_is_its_runs_code_identity(tmp_path):
    methods = tmp_path / "mine.yaml"
    methods.write_text(re.findall(r"```yaml\n(.*?)```", PAGE.read_text(), re.S)[1])
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke", "methods_file": str(methods), "experiments": ["suite.fair"]})
    run = next(r for r in plan.fair_runs() if r.method == "circle_vthm")
    code = plan.resolved(run)["method"]["code"]
    assert list(code) == ["pytorch_metric_learning.losses.circle_loss"] and len(code[next(iter(code))]) == 64


@pytest.mark.slow
def test_the_pages_pml_method_goes_through_the_smoke_fair_table(tmp_path):
    methods = tmp_path / "my_methods.yaml"
    methods.write_text(re.findall(r"```yaml\n(.*?)```", PAGE.read_text(), re.S)[1])  # the page's block, as written
    work = tmp_path / "work"
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(work), "--cores", "2"]
    command += ["--config", "preset=smoke", f"methods_file={methods}", "experiments=[suite.fair]"]
    result = subprocess.run(command, capture_output=True, text=True, env=python_env(), timeout=1800)
    assert result.returncode == 0, result.stderr[-4000:]
    table = pd.read_csv(work / "reports/smoke/suite.fair/fair_table.csv")
    assert "circle_vthm" in set(table["method"]) and table[table["method"] == "circle_vthm"]["mean"].notna().all()
    assert "<th class='row'>Circle loss (PML) + VTHM</th>" in (work / "reports/smoke/index.html").read_text()
