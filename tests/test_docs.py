"""The documentation: the generated pages cover the whole catalogue and every component, the site
builds with `mkdocs build --strict` (a broken link, a missing page or a page left out of the
navigation fails), and the README stays a short entry point."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from dmlbench import run_config
from dmlbench.methods import declared
from dmlbench.report import docs_pages

from conftest import REPO, full_plan


def test_the_generated_pages_name_every_experiment_and_every_component(tmp_path):
    catalogue, reference, settings_page, knobs_page, claims_page = docs_pages.write(tmp_path)
    text = claims_page.read_text()
    for exp in full_plan().experiments.values():
        for claim in exp.get("claims") or []:
            assert f"| `{claim['id']}` |" in text, claim["id"]
    assert "Default band: **1.0 points**" in text and "median of" in text
    text = catalogue.read_text()
    plan = full_plan()
    for key in plan.experiments:
        assert f"### `{key}`: " in text, key
    text = reference.read_text()
    for family in ("loss", "miner", "sampler"):
        for name, component in declared.components(family).items():
            assert f"### `{name}`" in text and component.source in text
    for name in plan.methods:
        assert f"| `{name}` |" in text
    text = settings_page.read_text()
    for key, *_ in run_config.documented():
        assert f"| `{key}` |" in text, key
    assert "## ms on cub: `ms.t2` `ms` vs `suite.fair` `ms`" in knobs_page.read_text()


def test_the_catalogue_carries_each_experiments_own_notes(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text(
        '# Paper X, section 4.\n# Setting: d = 512.\nx.t1:\n  title: "A # not a comment"\n'
        "  # the batch of the authors' code\n  train: {epochs: 5}   # section 4.2\nx.t2:\n  title: B\n"
    )
    header, notes = docs_pages.catalogue_notes(path)
    assert header == ["Paper X, section 4.", "Setting: d = 512."]
    assert notes == {"x.t1": ["the batch of the authors' code", "section 4.2"], "x.t2": []}


def test_the_site_builds_strictly(tmp_path):
    shutil.copytree(REPO / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns("generated"))
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    docs_pages.write(tmp_path / "docs" / "generated")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(tmp_path / "mkdocs.yml"),
            "-d",
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "WARNING" not in result.stderr
    assert (tmp_path / "site" / "generated" / "catalogue" / "index.html").exists()


def test_a_broken_link_fails_the_build(tmp_path):
    shutil.copytree(REPO / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns("generated"))
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    docs_pages.write(tmp_path / "docs" / "generated")
    page = tmp_path / "docs" / "index.md"
    page.write_text(page.read_text() + "\nSee [nowhere](no-such-page.md).\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(tmp_path / "mkdocs.yml"),
            "-d",
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
    )
    assert result.returncode != 0 and "no-such-page.md" in result.stderr


def test_the_readme_is_a_short_entry_point_whose_links_resolve():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) < 200
    assert "make demo" in readme and "make test" in readme
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        assert (REPO / target).exists(), target


def test_the_methods_page_names_every_registered_loss_miner_and_sampler():
    from dmlbench.methods.losses import LOSSES
    from dmlbench.methods.miners import MINERS
    from dmlbench.methods.samplers import SAMPLERS

    page = (REPO / "docs" / "methods.md").read_text()
    missing = [
        f"{registry.kind} {name}"
        for registry in (LOSSES, MINERS, SAMPLERS)
        for name in registry.names()
        if f"`{name}`" not in page
    ]
    assert missing == [], f"docs/methods.md names none of {missing}: add each one's row (equation, parameters)"


def test_the_proxy_loss_of_the_add_method_page_runs_as_written(monkeypatch):
    """The page's whole proxy loss: its value is NormFace's cross-entropy of the scaled cosines
    (written here from the equation), a miner is refused, its class vectors are unit rows."""
    import torch
    import torch.nn.functional as F

    from dmlbench.methods import miners
    from dmlbench.methods.losses.base import LOSSES

    page = (REPO / "docs" / "howto" / "add-method.md").read_text()
    block = re.search(r"\*\*A whole proxy loss\*\*.*?```python\n(.*?)```", page, re.S).group(1)
    monkeypatch.setattr(LOSSES, "register", lambda name: lambda cls: cls)  # the registry stays as it is
    namespace: dict = {}
    exec(compile(block, "add-method.md", "exec"), namespace)
    loss = namespace["NormSoftmax"](num_classes=3, embedding_dim=4, scale=8.0)
    x, y = torch.randn(6, 4), torch.tensor([0, 0, 1, 1, 2, 2])
    cosines = torch.stack([torch.stack([F.cosine_similarity(xi, p, dim=0) for p in loss.proxies]) for xi in x])
    expected = -torch.stack([torch.log_softmax(8.0 * c, 0)[label] for c, label in zip(cosines, y)]).mean()
    assert loss(x, y).item() == pytest.approx(expected.item(), rel=1e-5)
    with pytest.raises(ValueError, match="takes no miner"):
        loss(x, y, miner=miners.build("semihard", margin=0.2))
    assert torch.allclose(loss.class_vectors().norm(dim=1), torch.ones(3))
