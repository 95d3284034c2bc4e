"""What runs record for ephn.f3 / ephn.f6, the figures drawn from it, and the preset `subset`."""

import copy
import json

import numpy as np
import pandas as pd
import pytest
import torch

from dmlbench.config.plan import Plan
from dmlbench.core.errors import ConfigError
from dmlbench.methods.criterion import Criterion
from dmlbench.plots import FIGURES
from dmlbench.plots import triplets as triplet_figures
from dmlbench.run_config import RunConfig
from dmlbench.training import recording

from conftest import CONFIG_DIR


def test_closest_similarities_match_a_loop():
    g = torch.Generator().manual_seed(0)
    embeddings = torch.randn(37, 5, generator=g)
    labels = torch.tensor([i % 6 for i in range(36)] + [99])  # the last image has no positive
    recording.CHUNK, chunk = 8, recording.CHUNK  # several blocks
    try:
        s_ap, s_an = recording.closest_similarities(embeddings, labels)
    finally:
        recording.CHUNK = chunk
    x = torch.nn.functional.normalize(embeddings, dim=1)
    for i in range(len(labels)):
        pos = [float(x[i] @ x[j]) for j in range(len(labels)) if j != i and labels[j] == labels[i]]
        neg = [float(x[i] @ x[j]) for j in range(len(labels)) if labels[j] != labels[i]]
        if pos:
            assert s_ap[i] == pytest.approx(max(pos), abs=1e-6)
        else:
            assert np.isnan(s_ap[i])
        assert s_an[i] == pytest.approx(max(neg), abs=1e-6)


class TinyImages(torch.utils.data.Dataset):
    collate = staticmethod(torch.utils.data.default_collate)

    def device_batch(self, loaded, device):
        return loaded[0].to(device), loaded[1]

    def __init__(self, n_classes=4, per_class=8):
        g = torch.Generator().manual_seed(1)
        self.labels = [c for c in range(n_classes) for _ in range(per_class)]
        self.supers = None  # no super-categories, as ManifestImages of a dataset without them
        self.images = torch.randn(len(self.labels), 3, 8, 8, generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, item):
        index = item[0] if isinstance(item, tuple) else item  # (index, draw key): nothing here is drawn
        return self.images[index], self.labels[index]


def tiny_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3),
        torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(4, 6),
    )


def probe_config(steps=3, lr=0.5) -> RunConfig:
    return RunConfig.from_dict(
        {
            "seed": 0,
            "batch": {"size": 16, "per_class": 4, "small_classes": "fill", "per_pair": 5},
            "loader": {"workers": 0},
            "method": {
                "sampler": "m_per_class",
                "loss": {"name": "triplet_2nd"},
                "miner": {"name": "per_anchor", "positive": "hard", "negative": "hard", "one_triplet_per_image": True},
            },
            "record": {"scatter_epochs": [0], "probe": {"epochs": [0], "steps": steps, "lr": lr}},
        }
    )


def test_probe_measures_the_step_and_leaves_the_run_alone():
    cfg = probe_config()
    model, criterion, data = tiny_model(), Criterion(probe_config().method), TinyImages()
    before = copy.deepcopy(model.state_dict())
    moves = recording.probe(model, criterion, data, cfg, "cpu", torch.Generator().manual_seed(0), epoch=0)
    for name, value in model.state_dict().items():
        assert torch.equal(value, before[name]), name
    assert set(moves["step"]) == {1, 2, 3}
    assert len(moves) <= 3 * 16 // 3  # one triplet per image: at most B/3 per step
    assert (moves[["s_ap_after", "s_an_after"]].to_numpy() != moves[["s_ap", "s_an"]].to_numpy()).any()


def test_probe_after_similarities_are_those_of_the_updated_copy():
    """One step, redone by hand: the recorded 'after' similarities are the stepped model's."""
    cfg = probe_config(steps=1)
    model, data = tiny_model(), TinyImages()
    criterion = Criterion(cfg.method)
    moves = recording.probe(model, criterion, data, cfg, "cpu", torch.Generator().manual_seed(5), epoch=0)
    generator = torch.Generator().manual_seed(5)
    from dmlbench.methods import samplers

    sampler = samplers.build("m_per_class", data.labels, 16, 4, generator, 1)
    images, labels = next(iter(torch.utils.data.DataLoader(data, batch_sampler=sampler, generator=generator)))
    stepped = copy.deepcopy(model)
    optimizer = torch.optim.SGD(stepped.parameters(), lr=0.5)
    loss = criterion(stepped(images), labels)
    loss.backward()
    optimizer.step()
    a, p, n = criterion.triplets(model(images).detach(), labels)
    with torch.no_grad():
        after = torch.nn.functional.normalize(stepped(images), dim=1)
    np.testing.assert_allclose(moves["s_ap_after"], (after[a] * after[p]).sum(1).numpy(), atol=1e-5)
    np.testing.assert_allclose(moves["s_an_after"], (after[a] * after[n]).sum(1).numpy(), atol=1e-5)


def test_buffers_kept_restores_batchnorm_statistics():
    model = tiny_model().train()
    saved = copy.deepcopy(model.state_dict())
    with recording.buffers_kept(model):
        model(torch.randn(4, 3, 8, 8))
    for name, value in model.state_dict().items():
        assert torch.equal(value, saved[name]), name


def test_after_epoch_writes_once(tmp_path):
    cfg = probe_config(steps=2)
    calls = []

    def embed_train():
        calls.append(1)
        return np.random.default_rng(0).normal(size=(12, 4)), np.repeat(np.arange(3), 4)

    args = (tmp_path, cfg, tiny_model(), Criterion(cfg.method), TinyImages(), embed_train, "cpu", lambda message: None)
    recording.after_epoch(0, *args)
    recording.after_epoch(0, *args)  # a resumed run: nothing recorded twice
    recording.after_epoch(1, *args)  # not a listed epoch
    assert calls == [1]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.csv")) == [
        "moves/after_epoch0.csv",
        "scatter/after_epoch0.csv",
    ]


def test_quadrants():
    d_ap = pd.Series([0.1, -0.1, -0.1, 0.1, 0.0])
    d_an = pd.Series([0.1, 0.1, -0.1, -0.1, 0.2])
    assert triplet_figures.quadrant(d_ap, d_an).tolist() == [
        "top-right",
        "top-left",
        "bottom-left",
        "bottom-right",
        "none",
    ]


def test_every_figure_name_the_config_accepts_is_drawn_by_a_function_of_plots():
    from dmlbench.plots import ranking

    assert FIGURES.names() == ["triplet_moves", "triplet_scatter", "trunk_ranking"]
    assert FIGURES.get("trunk_ranking") is ranking.trunk_ranking
    assert FIGURES.get("triplet_scatter") is triplet_figures.triplet_scatter
    assert FIGURES.get("triplet_moves") is triplet_figures.triplet_moves


def test_triplet_figures_from_recorded_runs(tmp_path):
    spec = {"experiment": "ephn.x", "method_labels": {"m": "M"}}
    run_dir = tmp_path / "run"
    (run_dir / "scatter").mkdir(parents=True)
    (run_dir / "moves").mkdir()
    (run_dir / "config.json").write_text(
        json.dumps({"run": {"experiment": "ephn.x", "dataset": "cars", "method": "m", "seed": 0}})
    )
    for epoch in (0, 3):
        pd.DataFrame(
            {"index": range(4), "label": [0, 0, 1, 1], "s_ap": [0.9, 0.8, 0.7, 0.2], "s_an": [0.5, 0.9, 0.1, 0.3]}
        ).to_csv(run_dir / f"scatter/after_epoch{epoch}.csv")
        pd.DataFrame(
            {
                "step": [1, 1, 2],
                "s_ap": [0.5, 0.5, 0.5],
                "s_an": [0.5, 0.5, 0.5],
                "s_ap_after": [0.6, 0.4, 0.6],
                "s_an_after": [0.6, 0.4, 0.4],
            }
        ).to_csv(run_dir / f"moves/after_epoch{epoch}.csv")
    triplet_figures.triplet_scatter([run_dir], spec, tmp_path)
    triplet_figures.triplet_moves([run_dir], spec, tmp_path)
    scatter = pd.read_csv(tmp_path / "scatter.csv")
    assert scatter["correct_share"].tolist() == [0.5, 0.5]
    moves = pd.read_csv(tmp_path / "moves.csv").set_index(["after_epoch", "direction"])
    assert moves.loc[(0, "top-right"), "triplets"] == 1 and moves.loc[(3, "bottom-right"), "triplets"] == 1
    assert moves.loc[(0, "top-left"), "share"] == 0
    assert (tmp_path / "triplet_scatter.png").exists() and (tmp_path / "triplet_moves.png").exists()


def test_missing_recordings_name_the_setting(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"run": {}}))
    with pytest.raises(FileNotFoundError, match="record.scatter_epochs"):
        triplet_figures.triplet_scatter([tmp_path], {"experiment": "x", "method_labels": {}}, tmp_path)


# --- the preset's subset and the sweep --------------------------------------------------------


def test_subset_restricts_runs_and_sweeps_are_not_flattened_by_overrides():
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    runs = plan.runs("ephn.f4")
    assert {(r.dataset, r.method) for r in runs} == {("cars", "ephn_2nd@n2"), ("cars", "ephn_2nd@n8")}
    per_class = {r.method: plan.resolve(r)["batch"]["per_class"] for r in runs}
    assert per_class == {"ephn_2nd@n2": 2, "ephn_2nd@n8": 8}  # the preset's per_class 4 loses
    f3 = plan.resolve(plan.runs("ephn.f3")[0])
    assert f3["record"]["probe"] == {"epochs": [0, 2], "steps": 3, "lr": 1e-6}
    assert f3["method"]["miner"]["one_triplet_per_image"] is True


@pytest.mark.parametrize(
    "subset, message",
    [
        ({"ephn.f4": {"variants": ["n3"]}}, "variants: \\['n3'\\] not in"),
        ({"ephn.f2": {"datasets": ["cars"]}}, "not a training experiment"),
        ({"ephn.f4": {"train": {"batch": {"sise": 8}}}}, "unknown setting 'sise'"),
    ],
)
def test_bad_subsets_are_named(subset, message):
    with pytest.raises(ConfigError, match=message):
        Plan.load(CONFIG_DIR, {"preset": "smoke", "subset": subset})


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("figures: [triplet_scatter]", "figures: [triplet_scater]", "unknown figure 'triplet_scater'"),
        (
            "methods: [hphn_1st, hphn_2nd, epen_1st, epen_2nd]",
            "methods: [hphn_1st, ms, contrastive]",
            "sweep.once: sets miner options but method contrastive has no miner",
        ),
    ],
)
def test_bad_ephn_catalogue_entries_are_named(tmp_path, old, new, message):
    import shutil

    shutil.copytree(CONFIG_DIR, tmp_path / "config")
    path = tmp_path / "config" / "experiments" / "ephn.yaml"
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))
    with pytest.raises(ConfigError, match=message):
        Plan.load(tmp_path / "config", {"preset": "smoke"})
