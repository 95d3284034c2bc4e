"""Every entry of every registry, by parametrisation over the registry itself (a new entry is
tested without editing a list): each configured method builds and trains a step, each loss and
miner has a test against a reference, each scheme, analysis and figure is importable."""

import re
from pathlib import Path

import pytest
import torch

from dmlbench.analysis import ANALYSES
from dmlbench.methods import plugin_code
from dmlbench.methods.criterion import Criterion
from dmlbench.methods.losses import LOSSES
from dmlbench.methods.miners import MINERS
from dmlbench.methods.samplers import SAMPLERS
from dmlbench.plots import FIGURES
from dmlbench.training.schemes import SCHEMES

from conftest import full_plan

METHODS = full_plan().methods
TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize("name", list(METHODS))
def test_every_configured_method_builds_and_gives_a_finite_loss_with_a_gradient(name):
    """A batch of 4 classes × 4 images, d = 8, through the method's loss and miner."""
    torch.manual_seed(0)
    method = {"name": name, **METHODS[name], "code": plugin_code.digests(METHODS[name])}  # as the plan records it
    criterion = Criterion(method, num_classes=4, embedding_dim=8).double()
    embeddings = torch.randn(16, 8, dtype=torch.float64, requires_grad=True)
    labels = torch.arange(4).repeat_interleave(4)
    loss = criterion(embeddings, labels)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(embeddings.grad).all()


def _tested_names() -> set[str]:
    """Names given to a registry's `build` or to `Criterion` in the test files."""
    text = "".join(path.read_text() for path in TESTS.glob("test_*.py") if path.name != Path(__file__).name)
    return set(re.findall(r"""build\(\s*["']([a-z_0-9]+)["']""", text)) | set(
        re.findall(r"""["']name["']:\s*["']([a-z_0-9]+)["']""", text)
    )


@pytest.mark.parametrize("registry", [LOSSES, MINERS, SAMPLERS], ids=lambda r: r.kind)
def test_every_loss_miner_and_sampler_is_built_by_a_test(registry):
    """Each is checked against a brute-force reference or a closed form somewhere in the tests
    (tests/test_losses*.py, test_dro.py, test_fastap*.py, test_ephn_losses.py, test_profs.py, …):
    at least, some test builds it by name."""
    untested = sorted(set(registry.names()) - _tested_names())
    assert not untested, f"no test builds the {registry.kind}(s) {untested}"


@pytest.mark.parametrize("registry", [SCHEMES, ANALYSES, FIGURES], ids=lambda r: r.kind)
def test_every_scheme_analysis_and_figure_resolves_to_code(registry):
    for name in registry.names():
        assert callable(registry.get(name)), name
