"""What `suite.modern` costs at `full`: per trunk, the training step's images per second at the
recipe's batch, input side and precision (`benchmarks.training.images_per_second`: the loop's own
step on images already on the device, AdamW as the recipe has it), the peak GPU memory of that
step, and the forward pass's images per second for the evaluation; then the GPU-hours of every
run of the experiment in `full` (training images = epochs × batches per epoch × batch, plus each
dataset's test images embedded once) and the wall time on 8 GPUs.

Where no GPU exists it runs at a reduced size (64 px, batch 16, fp32): the code path only, and
the projection is then not printed.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from benchmarks import training
from dmlbench.config.plan import Plan
from dmlbench.models.embedding import EmbeddingNet

CONFIG_DIR = Path(__file__).resolve().parents[1] / "workflow" / "config"
EXPERIMENT = "suite.modern"
TEST_IMAGES = {"cub": 5_924, "cars": 8_131, "sop": 60_502, "inshop": 26_830}  # query + gallery for In-Shop
GPUS = 8


def embed_rate(backbone: str, side: int, batch: int, device, bf16: bool, steps: int = 5) -> float:
    """Images per second of the evaluation's forward pass (no gradient)."""
    model = EmbeddingNet(backbone, 128, pretrained=False).to(device).eval()
    images = torch.rand(batch, 3, side, side, device=device)
    with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        model(images)
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(steps):
            model(images)
        if device.type == "cuda":
            torch.cuda.synchronize()
    return batch * steps / (time.perf_counter() - start)


def run(steps: int = 5) -> dict:
    plan = Plan.load(CONFIG_DIR, {"preset": "full", "experiments": [EXPERIMENT]})
    runs = plan.runs(EXPERIMENT)
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    rows, projection = [], {}
    for variant in dict.fromkeys(r.variant for r in runs):
        cfg = plan.resolve(next(r for r in runs if r.variant == variant and r.base_method == "ms"))
        backbone, side, batch = cfg["model"]["backbone"], cfg["input"]["crop"], cfg["batch"]["size"]
        bf16 = cfg["performance"]["bf16"]
        if not cuda:
            side, batch, bf16 = 64, 16, False
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        train_rate = training.images_per_second(
            backbone,
            side,
            batch,
            device,
            bf16=bf16,
            steps=steps,
            embedding_dim=cfg["model"]["embedding_dim"],
            method=cfg["method"],
            optimizer=cfg["optimizer"],
        )
        peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else None
        eval_rate = embed_rate(backbone, side, min(batch, 256), device, bf16, steps)
        rows.append(
            {
                "trunk": variant,
                "backbone": backbone,
                "side": side,
                "batch": batch,
                "bf16": bf16,
                "train_img_s": train_rate,
                "peak_gib": peak,
                "eval_img_s": eval_rate,
            }
        )
        print(
            f"{variant} ({backbone}, {side} px, B {batch}, bf16 {bf16}): training {train_rate:.0f} img/s"
            + (f", peak {peak:.1f} GiB" if peak is not None else "")
            + f"; embedding {eval_rate:.0f} img/s",
            flush=True,
        )
        if cuda:
            seconds = 0.0
            for r in (r for r in runs if r.variant == variant):
                c = plan.resolve(r)
                seconds += c["epochs"] * c["batches_per_epoch"] * c["batch"]["size"] / train_rate
                seconds += TEST_IMAGES[r.dataset] / eval_rate
            projection[variant] = seconds / 3600
    if projection:
        total = sum(projection.values())
        print(
            f"{EXPERIMENT} at full ({len(runs)} runs): "
            + ", ".join(f"{v} {h:.0f} GPU-h" for v, h in projection.items())
            + f"; {total:.0f} GPU-hours, {total / GPUS:.1f} h on {GPUS} GPUs (training steps and one embedding of "
            f"each test set, at the loop's model-only speed: a lower bound)"
        )
    return {"rows": rows, "gpu_hours": projection, "device": torch.cuda.get_device_name(0) if cuda else "cpu"}


if __name__ == "__main__":
    run()
