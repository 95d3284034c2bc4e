"""Every configured method on degenerate batches: a finite loss and finite gradients."""

import pytest
import torch

from dmlbench.methods import plugin_code
from dmlbench.methods.criterion import Criterion

from conftest import full_plan

B, D = 8, 16
METHODS = full_plan().methods


def degenerate_batch(case: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(embeddings, labels) of one degenerate kind."""
    generator = torch.Generator().manual_seed(0)
    embeddings = torch.randn(B, D, generator=generator)
    labels = torch.arange(B) // 2
    if case == "no positive pair":
        labels = torch.arange(B)
    elif case == "one class (no negative)":
        labels = torch.zeros(B, dtype=torch.long)
    elif case == "duplicated images":
        embeddings[1::2] = embeddings[0::2]
    elif case == "collapsed embeddings":
        embeddings = torch.ones(B, D)
    return embeddings, labels


@pytest.mark.parametrize(
    "case", ["no positive pair", "one class (no negative)", "duplicated images", "collapsed embeddings"]
)
@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_is_finite_on_degenerate_batches(name, case):
    embeddings, labels = degenerate_batch(case)
    embeddings.requires_grad_(True)
    torch.manual_seed(0)
    method = {**METHODS[name], "code": plugin_code.digests(METHODS[name])}  # as the plan records it
    loss = Criterion(method, num_classes=B, embedding_dim=D)(embeddings, labels)
    assert torch.isfinite(loss), f"{name} on a batch with {case}: loss {loss.item()}"
    if loss.requires_grad:
        loss.backward()
        assert torch.isfinite(embeddings.grad).all(), f"{name} on a batch with {case}: non-finite gradient"
