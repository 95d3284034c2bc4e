"""The compute budget against a real run (target: projection within ±15 % of the measured time).

The preflight's probe of a small run's group (`dmlbench.preflight.probe`, 5 warm steps) gives
seconds per step and evaluation seconds per image; the budget's formula
(`dmlbench.preflight.budget`: steps × t_step + evaluations × test images × t_image) projects the
run; then the run trains for real (`dmlbench.training.train.train`, the same process start excluded) and its
wall time is compared. A CPU figure: ResNet-18 at 64 px on a CUB fixture, MS loss, batch 16.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

from dmlbench.config.plan import Plan
from dmlbench.data import manifest as manifest_io
from dmlbench.data.prepare import prepare
from dmlbench.preflight import budget
from dmlbench.preflight.probe import probe
from dmlbench.run_config import RunConfig
from dmlbench.training.train import train

CONFIG_DIR = Path(__file__).resolve().parents[1] / "workflow" / "config"


def run(epochs: int = 3, batches: int = 20, warm_steps: int = 5) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        manifest = root / "fixture" / "cub" / "manifest.csv"
        prepare("cub", "fixture", root, manifest, fixture_size={"n_classes": 16, "per_class": 8, "image_size": 72})
        plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
        cfg = plan.resolve(plan.find_run("suite.baselines", "cub", "ms", 0))
        cfg["data"] = {"manifest": str(manifest)}
        cfg["model"].update(backbone="resnet18")
        cfg["input"].update(resize=72, crop=64)
        cfg.update(epochs=epochs, batches_per_epoch=batches)
        measured_probe = probe(cfg, "cub", root / "probe" / "group", None, "cpu", warm_steps=warm_steps)
        if measured_probe["status"] != "passed":
            raise RuntimeError(measured_probe["error"])
        table = manifest_io.read(manifest)
        test_images = int((table["split"] != "train").sum())
        typed = RunConfig.from_dict(cfg)
        steps = typed.epochs * budget.steps_per_epoch(typed, "cub")
        projected = (
            steps * measured_probe["seconds_per_step"]
            + budget.evaluations(typed) * test_images * measured_probe["eval_seconds_per_image"]
        )
        started = time.perf_counter()
        train(cfg, root / "run", log=lambda m: None)
        measured = time.perf_counter() - started
    ratio = projected / measured
    row = {
        "steps": steps,
        "test_images": test_images,
        "warm_steps": warm_steps,
        "seconds_per_step": measured_probe["seconds_per_step"],
        "projected_s": projected,
        "measured_s": measured,
        "ratio": ratio,
        "within_15_percent": math.isclose(ratio, 1, abs_tol=0.15),
    }
    print(f"budget: projected {projected:.1f} s, measured {measured:.1f} s ({ratio:.2f}×)", flush=True)
    return row


if __name__ == "__main__":
    run()
