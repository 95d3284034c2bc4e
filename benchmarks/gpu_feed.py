"""Is the GPU fed? Per paper configuration of `full` (its backbone, input size, batch, loader and
decoded-image store): images per second of the real training loop (`dmlbench.training.train.train` on a
fixture at photo size, through the store; the mean of the warm steps of its second epoch) against
the same network and loss on tensors already on the device (`benchmarks.training`). Target: the
ratio ≥ 0.9.

Where no GPU exists it runs on the CPU at a reduced size (64-pixel crops, batch 16, no workers):
the code path is the GPU's, the figure says nothing about a GPU.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import torch

from benchmarks import training
from dmlbench.config.plan import Plan
from dmlbench.data import store
from dmlbench.data.prepare import prepare
from dmlbench.training.train import train

CONFIG_DIR = Path(__file__).resolve().parents[1] / "workflow" / "config"
CONFIGS = (
    ("ms.t2", "ms"),
    ("ephn.t1", "ephn_1st"),
    ("profs.t1", "contrastive_hard"),
    ("fastap.t2", "fastap_random_r18"),
)  # BN-Inception, ResNet-50, GoogLeNet, ResNet-18
TARGET = 0.9


def paper_config(experiment: str, method: str, manifest: Path, cuda: bool, steps: int) -> dict:
    """The first run of `experiment` × `method` in `full`, on `manifest`, two epochs of `steps`
    batches, no evaluation; on a CPU at 64 px, batch 16, no loader workers."""
    plan = Plan.load(CONFIG_DIR, {"preset": "full"})
    run = next(r for r in plan.runs(experiment) if r.method == method)
    cfg = plan.resolve(run)
    cfg.update(epochs=2, batches_per_epoch=steps, device="cuda" if cuda else "cpu")
    cfg["data"] = {"manifest": str(manifest)}
    cfg["model"]["pretrained"] = False
    cfg["eval"]["every"] = 0
    if not cuda:
        cfg["input"].update(resize=72, crop=64, padding=0)
        cfg["batch"].update(size=16, per_class=min(cfg["batch"]["per_class"], 4))
        cfg["loader"].update(workers=0)
    return cfg


def fixture(root: Path, cfg: dict, image_size: int) -> Path:
    """A SOP-format fixture with enough classes for the batch, and its store at the run's size."""
    classes = 2 * max(12, 2 * cfg["batch"]["size"] // cfg["batch"]["per_class"])
    manifest = root / "fixture" / "sop" / "manifest.csv"
    prepare(
        "sop", "fixture", root, manifest, fixture_size={"n_classes": classes, "per_class": 6, "image_size": image_size}
    )
    return manifest


def measure(experiment: str, method: str, root: Path, cuda: bool, steps: int) -> dict:
    probe_cfg = paper_config(experiment, method, Path("unused"), cuda, steps)
    manifest = fixture(root / experiment, probe_cfg, 500 if cuda else 80)
    cfg = paper_config(experiment, method, manifest, cuda, steps)
    if cfg["data"].get("store") is not False:
        folder = manifest.parent / "store"
        store.build(manifest, folder, cfg["input"]["resize"], log=lambda m: None)
        cfg["data"]["store"] = str(folder)
    train(cfg, root / experiment / "run", log=lambda m: None)
    epochs = [json.loads(line) for line in (root / experiment / "run" / "epochs.jsonl").read_text().splitlines()]
    batch, side = cfg["batch"]["size"], cfg["input"]["crop"]
    end_to_end = batch / epochs[-1]["warm_seconds_per_step"]
    device = torch.device(cfg["device"])
    model_only = training.images_per_second(
        cfg["model"]["backbone"],
        side,
        batch,
        device,
        steps=steps - 1,
        embedding_dim=cfg["model"]["embedding_dim"],
        method=cfg["method"],
        optimizer=cfg["optimizer"],
    )
    return {
        "experiment": experiment,
        "backbone": cfg["model"]["backbone"],
        "crop": side,
        "batch": batch,
        "workers": cfg["loader"]["workers"],
        "store": bool(cfg["data"].get("store")),
        "end_to_end": end_to_end,
        "model_only": model_only,
        "ratio": end_to_end / model_only,
        "target_met": end_to_end / model_only >= TARGET,
    }


def run(steps: int = 20, configs=CONFIGS) -> dict:
    cuda = torch.cuda.is_available()
    device = torch.cuda.get_device_name(0) if cuda else "no GPU: CPU at 64 px, batch 16 (code path only)"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for experiment, method in configs:
            row = measure(experiment, method, Path(tmp), cuda, steps)
            rows.append(row)
            print(
                f"GPU feed {row['backbone']} {row['crop']} px B {row['batch']}: end to end "
                f"{row['end_to_end']:.0f} img/s, model only {row['model_only']:.0f} img/s "
                f"({row['ratio']:.2f}×, target ≥ {TARGET}×)",
                flush=True,
            )
    return {"rows": rows, "device": device, "cuda": cuda}


if __name__ == "__main__":
    run()
