"""What a training's per-epoch checkpoint costs: its size and the seconds to write it.

The fair recipe's network (BN-Inception, 128-d embedding, RMSprop with momentum, the best epoch's
model kept for early stopping) after one real step, so that the optimiser holds its state; the
training loop's own `checkpoint.save` into a folder (default: a temporary folder; `--folder` for
the disk the runs write to). On a GPU the copy of the state to the host is included.

    python -m benchmarks.checkpoint_cost [--device cuda] [--folder results] [--repeats 5]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from dmlbench.methods.criterion import Criterion
from dmlbench.models.embedding import EmbeddingNet
from dmlbench.run_config import Optimizer, from_mapping
from dmlbench.training import checkpoint
from dmlbench.training.optimisers import build_loss_optimizer, build_optimizer
from dmlbench.training.step import train_step

FAIR_OPTIMIZER = {"name": "rmsprop", "lr": 1.0e-6, "loss_lr_mult": 100.0, "weight_decay": 1.0e-4, "momentum": 0.9}
METHOD = {"loss": {"name": "multi_similarity"}, "miner": {"name": "multi_similarity"}}


def run(
    device: str = "cpu",
    folder: Path | None = None,
    repeats: int = 5,
    backbone: str = "bninception",
    side: int = 227,
    batch: int = 32,
) -> dict:
    device = torch.device(device)
    torch.manual_seed(0)
    model = EmbeddingNet(backbone, 128, pretrained=False).to(device).train()
    criterion = Criterion(METHOD, num_classes=batch // 4, embedding_dim=128).to(device)
    settings = from_mapping(Optimizer, FAIR_OPTIMIZER, "optimizer")
    optimizers = [
        o
        for o in (build_optimizer(model, criterion, settings), build_loss_optimizer(criterion, settings))
        if o is not None
    ]
    images = torch.rand(batch, 3, side, side, device=device)
    labels = torch.arange(batch // 4, device=device).repeat_interleave(4)
    train_step(model, criterion, optimizers, images, labels)
    parts = {"model": model, "criterion": criterion, "optimizer": optimizers[0]}
    best = {"best_model": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}}  # early stopping's
    history = [{"epoch": e + 1, "loss": 0.1, "map@r": 0.2} for e in range(50)]
    seconds = []
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        run_dir = Path(tmp)
        for _ in range(repeats):
            if device.type == "cuda":
                torch.cuda.synchronize()
            started = time.perf_counter()
            checkpoint.save(run_dir, parts, history, {"seed": 0}, best)
            seconds.append(time.perf_counter() - started)
        size = (run_dir / "checkpoint.pt").stat().st_size
    seconds.sort()
    row = {
        "device": str(device),
        "backbone": backbone,
        "megabytes": round(size / 1e6, 1),
        "median_s": round(seconds[len(seconds) // 2], 3),
        "min_s": round(seconds[0], 3),
        "max_s": round(seconds[-1], 3),
    }
    print(
        f"checkpoint of {backbone} on {device}: {row['megabytes']} MB, {row['median_s']} s median "
        f"({row['min_s']}-{row['max_s']} s over {repeats} writes)",
        flush=True,
    )
    return row


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--folder", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    run(args.device, args.folder, args.repeats)
