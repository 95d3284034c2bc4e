"""docs/howto/own-code.md: its example runs as written, and the suite's losses equal
pytorch-metric-learning's under its MeanReducer (and not under its default reducer)."""

import re

import pytest
import torch

from dmlbench.core.errors import ConfigError
from dmlbench.methods import losses, samplers

from conftest import REPO


def test_the_pages_example_runs():
    page = (REPO / "docs" / "howto" / "own-code.md").read_text()
    code = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    namespace: dict = {}
    exec(compile(code, "own-code.md", "exec"), namespace)
    assert namespace["value"].item() >= 0 and 0 <= namespace["found"]["recall@1"] <= 1
    assert namespace["embeddings"].grad is not None


def test_the_pages_sampler_example_runs_and_its_batches_are_classes_times_images():
    page = (REPO / "docs" / "howto" / "own-code.md").read_text()
    code = re.findall(r"```python\n(.*?)```", page, re.S)[1]
    namespace: dict = {}
    exec(compile(code, "own-code.md", "exec"), namespace)
    sampler = namespace["sampler"]
    assert isinstance(sampler, torch.utils.data.Sampler) and len(sampler) == 60 // 16
    labels = namespace["labels"].tolist()
    first, again = (samplers.build("m_per_class", labels, 16, 4, torch.Generator().manual_seed(0)) for _ in "ab")
    assert [list(b) for b in first] == [list(b) for b in again]  # the same seed, the same batches
    torch.manual_seed(5)
    unseeded = [list(b) for b in samplers.build("m_per_class", labels, 16, 4)]
    torch.manual_seed(5)
    assert unseeded == [list(b) for b in samplers.build("m_per_class", labels, 16, 4)]
    with pytest.raises(ConfigError, match=r"samplers.build\('m_per_class'\) needs per_class"):
        samplers.build("m_per_class", [0, 0, 1, 1], batch_size=4)


def _batch():
    torch.manual_seed(0)
    return torch.randn(12, 8, dtype=torch.float64), torch.arange(4).repeat_interleave(3)


@pytest.mark.parametrize(
    "name, params, theirs",
    [
        ("triplet", {"margin": 0.1}, lambda pml, d, r: pml.TripletMarginLoss(margin=0.1, distance=d, reducer=r)),
        (
            "contrastive",
            {"neg_margin": 0.5, "pos_margin": 1.0},
            lambda pml, d, r: pml.ContrastiveLoss(pos_margin=1.0, neg_margin=0.5, distance=d, reducer=r),
        ),
    ],
)
def test_a_loss_equals_pmls_with_its_mean_reducer_not_its_default(name, params, theirs):
    from pytorch_metric_learning import losses as pml
    from pytorch_metric_learning.distances import CosineSimilarity
    from pytorch_metric_learning.reducers import AvgNonZeroReducer, MeanReducer

    embeddings, labels = _batch()
    ours = losses.build(name, **params)(embeddings, labels).item()
    mean = theirs(pml, CosineSimilarity(), MeanReducer())(embeddings, labels).item()
    default = theirs(pml, CosineSimilarity(), AvgNonZeroReducer())(embeddings, labels).item()
    assert ours == pytest.approx(mean, rel=1e-12)
    assert abs(ours - default) > 1e-3
