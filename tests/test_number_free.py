"""Settings the docs call number-free give identical numbers: the loader's worker count (each
training image's crop and flip drawn by key, not by the process that decodes it), across an
interrupt and resume with another count, and for PROFS' HNCM, which plans a batch from the steps
before it. And a run that cannot train fails instead of recording an untrained network."""

import json

import numpy as np
import pytest
import torch
from PIL import Image

from dmlbench.config.plan import Plan
from dmlbench.data import draws, images
from dmlbench.data.prepare import prepare
from dmlbench.run_config import Input
from dmlbench.training import recording, train
from dmlbench.training.step import UntrainableError

from conftest import CONFIG_DIR

pytestmark = pytest.mark.xdist_group("test_number_free")  # one worker: its module fixture once


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    manifest = root / "fixture" / "cub" / "manifest.csv"
    prepare("cub", "fixture", root, manifest, fixture_size={"n_classes": 8, "per_class": 6, "image_size": 40})
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})

    def config(experiment: str, method: str, **changes) -> dict:
        cfg = plan.resolve(plan.find_run(experiment, "cub", method, 0))
        cfg["data"] = {"manifest": str(manifest)}  # images decoded per image, in the loader's workers
        cfg.update({"epochs": 2, "batches_per_epoch": 4, **changes})
        cfg["eval"] = dict(cfg["eval"], every=0)
        return cfg

    return config


def with_workers(cfg: dict, workers: int) -> dict:
    return dict(cfg, loader=dict(cfg["loader"], workers=workers, persistent_workers=False))


def numbers(run_dir) -> tuple:
    """Every epoch's loss, the final metrics, the weights (bytes) and the settings' fingerprint."""
    losses = [json.loads(line)["loss"] for line in (run_dir / "epochs.jsonl").read_text().splitlines()]
    final = json.loads((run_dir / "final_metrics.json").read_text())
    state = torch.load(run_dir / "model.pt", weights_only=True)["model"]
    weights = {name: tensor.numpy().tobytes() for name, tensor in state.items()}
    return losses, final["result"]["metrics"], weights, final["result"]["fingerprint"]


@pytest.mark.parametrize("padding, flip, crop", [(0, True, 28), (4, True, 32), (3, False, 30)])
def test_an_images_draws_are_torchvisions_under_its_key(padding, flip, crop):
    """The reference: torchvision's own Resize, RandomCrop and RandomHorizontalFlip, run after
    seeding the global generator with the image's key."""
    from torchvision import transforms

    cfg = Input(resize=32, crop=crop, padding=padding, flip=flip)
    pixels = np.random.default_rng(0).integers(0, 256, (45, 40, 3), dtype=np.uint8)
    image = Image.fromarray(pixels)
    steps = [transforms.Resize((32, 32)), transforms.RandomCrop(crop, padding=padding or None)]
    reference = transforms.Compose(
        steps + ([transforms.RandomHorizontalFlip()] if flip else []) + [transforms.ToTensor()]
    )
    ours, seen = images.TrainTransform(cfg), set()
    for slot in range(12):
        key = draws.draw_key(3, 1, 2, slot)
        torch.manual_seed(key)
        expected = reference(image)
        got = ours(image, key)
        assert torch.equal(got, expected)
        seen.add(got.numpy().tobytes())
    assert len(seen) > 1  # the keys draw different crops


def test_a_training_image_without_its_key_is_refused():
    with pytest.raises(TypeError, match="drawn by key"):
        images.TrainTransform(Input(resize=8, crop=8))(Image.new("RGB", (8, 8)), None)


def test_keys_differ_by_seed_stream_step_and_slot():
    keys = {draws.draw_key(*k) for k in [(0, 0, 0, 0), (1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1)]}
    assert len(keys) == 5 and all(0 <= k < 2**63 for k in keys)
    assert draws.probe_stream(0) != draws.TRAINING + 0


def test_any_number_of_loader_workers_gives_the_same_numbers(smoke, tmp_path):
    cfg = smoke("suite.baselines", "ms")
    results = {}
    for workers in (0, 1, 2, 4):
        train.train(with_workers(cfg, workers), tmp_path / f"w{workers}", log=lambda m: None)
        results[workers] = numbers(tmp_path / f"w{workers}")
    assert results[1] == results[0] and results[2] == results[0] and results[4] == results[0]


def test_a_run_resumed_with_another_worker_count_continues_as_uninterrupted(smoke, tmp_path, monkeypatch):
    cfg = smoke("suite.baselines", "ms", epochs=3)
    train.train(with_workers(cfg, 0), tmp_path / "whole", log=lambda m: None)

    real = recording.after_epoch

    def stop_after_first_epoch(epoch, *args, **kwargs):
        real(epoch, *args, **kwargs)
        if epoch == 1:
            raise KeyboardInterrupt  # as Ctrl-C: the finished epoch is kept in the checkpoint

    monkeypatch.setattr(recording, "after_epoch", stop_after_first_epoch)
    with pytest.raises(KeyboardInterrupt):
        train.train(with_workers(cfg, 2), tmp_path / "cut", log=lambda m: None)
    monkeypatch.setattr(recording, "after_epoch", real)
    assert (tmp_path / "cut" / "checkpoint.pt").exists() and not (tmp_path / "cut" / "model.pt").exists()
    logs = []
    train.train(with_workers(cfg, 1), tmp_path / "cut", log=logs.append)
    assert any("after epoch 1" in line for line in logs), logs
    assert numbers(tmp_path / "cut") == numbers(tmp_path / "whole")


def test_hncm_plans_each_batch_from_every_step_before_it_whatever_the_workers(smoke, tmp_path):
    """HNCM ranks classes by the representatives' latest embeddings: with workers drawing batches
    ahead, the plan would read an older table. Its batches are drawn in the training process."""
    cfg = smoke("profs.t1", "m_profs_hncm", batches_per_epoch=6)
    for workers in (0, 2):
        train.train(with_workers(cfg, workers), tmp_path / f"w{workers}", log=lambda m: None)
    assert numbers(tmp_path / "w2") == numbers(tmp_path / "w0")


class DetachedLoss(torch.nn.Module):
    """A loss whose value does not depend on the embeddings."""

    def forward(self, embeddings, labels, miner=None):
        return embeddings.detach().pow(2).sum() + 1.0


class NothingMined(torch.nn.Module):
    """A loss that finds nothing to learn from in any batch: zero, without a gradient."""

    def forward(self, embeddings, labels, miner=None):
        return torch.zeros(())


@pytest.mark.parametrize(
    "loss, message",
    [(DetachedLoss(), "has no gradient"), (NothingMined(), "every step of the first epoch was skipped")],
)
def test_a_run_that_cannot_train_fails_and_writes_no_model(smoke, tmp_path, monkeypatch, loss, message):
    from dmlbench.methods import criterion

    real_init = criterion.Criterion.__init__

    def with_broken_loss(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.loss = loss

    monkeypatch.setattr(criterion.Criterion, "__init__", with_broken_loss)
    cfg = smoke("suite.baselines", "contrastive")
    with pytest.raises(UntrainableError, match=message) as raised:
        train.train(cfg, tmp_path / "run", log=lambda m: None)
    assert str(tmp_path / "run") in str(raised.value)
    assert not (tmp_path / "run" / "model.pt").exists() and not (tmp_path / "run" / "final_metrics.json").exists()
