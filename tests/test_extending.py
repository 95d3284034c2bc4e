"""A newcomer's extensions, done as the how-to pages say, in a temporary copy of the checkout: the
Proxy-Anchor loss (code, test, methods.yaml: three files) and a dataset of class folders (code,
test, an experiment file listing it: three files); each is then tested, planned and run by the
pipeline (the loss after an experiment lists it), and nothing else is edited."""

import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from dmlbench.data import class_folders
from dmlbench.core.errors import DatasetError

from conftest import REPO, python_env

PROXY_ANCHOR = textwrap.dedent('''
    """Proxy-Anchor (Kim et al., CVPR 2020): one proxy per class, each proxy an anchor,

        L = 1/|P+| sum_{p in P+} log(1 + sum_{x in X_p+} exp(-alpha (s(x, p) - delta)))
          + 1/|P|  sum_{p in P}  log(1 + sum_{x in X_p-} exp( alpha (s(x, p) + delta)))

    with s the cosine similarity, P+ the proxies with a positive in the batch. Defaults alpha = 32,
    delta = 0.1 (the paper's)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from dmlbench.methods.losses.base import LOSSES


    @LOSSES.register("proxy_anchor_own")
    class ProxyAnchorLoss(nn.Module):
        """Proxy-Anchor: the equation above; proxies initialised with Kaiming normal."""

        takes_miner = False
        restricts_pairs = False
        needs = ("num_classes", "embedding_dim")

        def __init__(self, num_classes: int, embedding_dim: int, alpha: float = 32.0, delta: float = 0.1):
            super().__init__()
            self.proxies = nn.Parameter(nn.init.kaiming_normal_(torch.empty(num_classes, embedding_dim),
                                                                mode="fan_out"))
            self.alpha, self.delta = alpha, delta

        def forward(self, embeddings, labels, miner=None):
            s = F.normalize(embeddings, dim=1) @ F.normalize(self.proxies, dim=1).T
            own = F.one_hot(labels, len(self.proxies)).bool()
            pos = torch.where(own, torch.exp(-self.alpha * (s - self.delta)), torch.zeros_like(s)).sum(0)
            neg = torch.where(~own, torch.exp(self.alpha * (s + self.delta)), torch.zeros_like(s)).sum(0)
            with_positives = own.any(0)
            return torch.log1p(pos[with_positives]).sum() / with_positives.sum() + torch.log1p(neg).mean()

        def class_vectors(self):
            return self.proxies
''')

PROXY_ANCHOR_TEST = textwrap.dedent("""
    import math

    import pytest
    import torch
    import torch.nn.functional as F

    from dmlbench.methods.criterion import Criterion


    def test_proxy_anchor_equals_the_papers_sums_written_out():
        torch.manual_seed(0)
        method = {"name": "proxy_anchor_own", "loss": {"name": "proxy_anchor_own", "alpha": 8.0, "delta": 0.1}}
        criterion = Criterion(method, num_classes=5, embedding_dim=6).double()
        x, y = torch.randn(12, 6, dtype=torch.float64), torch.tensor([0, 0, 1, 1, 2, 2, 0, 1, 2, 0, 1, 2])
        p = criterion.loss.proxies
        s = [[F.cosine_similarity(x[i], p[c], dim=0).item() for c in range(5)] for i in range(12)]
        positive = sum(math.log(1 + sum(math.exp(-8 * (s[i][c] - 0.1)) for i in range(12) if y[i] == c))
                       for c in range(5) if (y == c).any()) / 3
        negative = sum(math.log(1 + sum(math.exp(8 * (s[i][c] + 0.1)) for i in range(12) if y[i] != c))
                       for c in range(5)) / 5
        assert criterion(x, y).item() == pytest.approx(positive + negative, rel=1e-10)
""")

PROXY_ANCHOR_METHOD = textwrap.dedent("""
    proxy_anchor_own:
      label: Proxy-Anchor
      paper: null
      loss: {name: proxy_anchor_own, alpha: 32.0, delta: 0.1}
      sampler: m_per_class
""")

DOGS = re.search(r"```python\n(.*?)```", (REPO / "docs" / "howto" / "add-dataset.md").read_text(), re.S).group(1)

DOGS_TEST = textwrap.dedent("""
    from dmlbench.data import datasets


    def test_stanford_dogs_is_registered():
        assert datasets.get("stanford_dogs").label == "Stanford Dogs"
""")


def checkout_copy(root):
    """Snakefile, workflow/ and the package: what a newcomer edits."""
    root.mkdir()
    shutil.copy(REPO / "Snakefile", root / "Snakefile")
    for folder in ("workflow", "dmlbench", "tests"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", "generated"))
    return root


def run(root, *args, timeout=600):
    env = {k: v for k, v in python_env().items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, *args],
        cwd=root,
        env=dict(env, PYTHONPATH=str(root)),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def newcomers_test_passes(root, test_file: str) -> None:
    tested = run(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", f"tests/{test_file}")
    assert tested.returncode == 0, tested.stdout[-3000:]


def test_class_folders_parse_what_the_writer_writes_split_in_halves(tmp_path):
    stats = class_folders.write_fixture(tmp_path, 5, 3, np.random.default_rng(0), 32, archive="x.tar", top="Images")
    import tarfile

    with tarfile.open(tmp_path / "x.tar") as archive:
        archive.extractall(tmp_path / "raw", filter="data")
    table = class_folders.parse(tmp_path / "raw", "Images")
    assert len(table) == 15 and sorted(table["label"].unique()) == [1, 2, 3, 4, 5]
    assert set(table[table["split"] == "train"]["label"]) == {1, 2}
    assert table.groupby("split")["path"].count().to_dict() == stats.images
    assert all((tmp_path / "raw" / p).exists() for p in table["path"])


def test_an_empty_class_folder_is_named(tmp_path):
    for name in ("a", "b"):
        (tmp_path / "Images" / name).mkdir(parents=True)
    (tmp_path / "Images" / "a" / "1.jpg").write_bytes(b"")
    with pytest.raises(DatasetError, match=r"Images/b holds no image"):
        class_folders.parse(tmp_path, "Images")


@pytest.mark.slow
def test_proxy_anchor_in_three_files_then_planned_and_trained(tmp_path):
    root = checkout_copy(tmp_path / "checkout")
    (root / "dmlbench/methods/losses/proxy_anchor.py").write_text(PROXY_ANCHOR)  # 1. code
    (root / "tests/test_proxy_anchor.py").write_text(PROXY_ANCHOR_TEST)  # 2. test
    methods = root / "workflow/config/methods.yaml"  # 3. config
    methods.write_text(methods.read_text() + PROXY_ANCHOR_METHOD)
    newcomers_test_passes(root, "test_proxy_anchor.py")
    subset = "subset={suite.baselines: {datasets: [cub], methods: [proxy_anchor_own]}}"
    edit(
        root / "workflow/config/experiments/suite.yaml",
        "  methods: [contrastive, triplet_semihard, ms]\n",
        "  methods: [contrastive, triplet_semihard, ms, proxy_anchor_own]\n",
    )
    trained = run(
        root,
        "-m",
        "snakemake",
        "--cores",
        "2",
        "--config",
        "preset=smoke",
        "experiments=[suite.baselines]",
        subset,
        timeout=900,
    )
    assert trained.returncode == 0, trained.stderr[-3000:]
    metrics = list((root / "results/smoke/suite.baselines/cub/proxy_anchor_own").glob("seed*/metrics.json"))
    assert metrics, "the Proxy-Anchor run was trained and evaluated"
    edit(methods, "proxy_anchor_own, alpha: 32.0, delta: 0.1}", "proxy_anchor_own, alpha: 32.0, delat: 0.1}")
    refused = run(root, "-m", "snakemake", "-n", "--config", "preset=smoke")
    assert refused.returncode != 0
    assert (
        "method proxy_anchor_own.loss.delat: loss 'proxy_anchor_own' has no parameter 'delat' "
        "(did you mean 'delta'?)" in refused.stdout + refused.stderr
    )


@pytest.mark.slow
def test_a_class_folder_dataset_in_three_files_then_prepared_and_planned(tmp_path):
    root = checkout_copy(tmp_path / "checkout")
    (root / "dmlbench/data/datasets/stanford_dogs.py").write_text(DOGS)  # 1. code
    (root / "tests/test_stanford_dogs.py").write_text(DOGS_TEST)  # 2. test
    edit(
        root / "workflow/config/experiments/suite.yaml",  # 3. config
        "  datasets: [cub, cars, sop, inshop, digits]\n  methods: [contrastive, triplet_semihard, ms]\n",
        "  datasets: [cub, cars, sop, inshop, digits, stanford_dogs]\n  methods: [contrastive, triplet_semihard, ms]\n",
    )
    newcomers_test_passes(root, "test_stanford_dogs.py")
    config = ["--config", "preset=smoke", "experiments=[suite.baselines]", "datasets=[stanford_dogs]"]
    planned = run(root, "-m", "snakemake", "-n", *config)
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert "stanford_dogs" in planned.stdout and "train" in planned.stdout
    found = run(
        root,
        "-c",
        "from dmlbench.config.plan import Plan; print(Plan.load('workflow/config', {'preset': 'smoke'}).data_dir)",
    )
    manifest = f"{found.stdout.strip()}/stanford_dogs/manifest.csv"
    prepared = run(root, "-m", "snakemake", "--cores", "1", *config, "--", manifest)
    assert prepared.returncode == 0, prepared.stderr[-3000:]
    table = pd.read_csv(root / manifest)
    assert set(table["split"]) == {"train", "test"} and table["label"].nunique() == 16
