"""Training step throughput: images per second of forward + loss + backward + optimiser step.

On CPU: the small CNN at 32 px and resnet18 at 64 px. On a GPU also the performance options of
the training loop (bf16 autocast, channels-last), each against the plain setting.
"""

from __future__ import annotations

import time

import torch

from dmlbench.methods.criterion import Criterion
from dmlbench.models.embedding import EmbeddingNet
from dmlbench.run_config import Optimizer, from_mapping
from dmlbench.training.optimisers import build_loss_optimizer, build_optimizer
from dmlbench.training.step import train_step

METHOD = {"loss": {"name": "multi_similarity"}, "miner": {"name": "multi_similarity"}}


def images_per_second(
    backbone: str,
    size: int,
    batch: int,
    device,
    bf16=False,
    channels_last=False,
    steps: int = 5,
    embedding_dim: int = 128,
    method=METHOD,
    optimizer: dict | None = None,
) -> float:
    """The training loop's own step (`dmlbench.training.step.train_step`) on random images already on
    the device: the model's speed with nothing to load. `optimizer`: a run's optimizer settings
    (default: Adam at 1e-4 over every parameter)."""
    torch.manual_seed(0)
    model = EmbeddingNet(backbone, embedding_dim, pretrained=False).to(device).train()
    memory = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(memory_format=memory)
    criterion = Criterion(method, num_classes=-(-batch // 4), embedding_dim=embedding_dim).to(device)
    if optimizer is None:
        optimizers = [torch.optim.Adam(list(model.parameters()) + list(criterion.parameters()), lr=1e-4)]
    else:
        settings = from_mapping(Optimizer, optimizer, "optimizer")
        optimizers = [build_optimizer(model, criterion, settings), build_loss_optimizer(criterion, settings)]
        optimizers = [each for each in optimizers if each is not None]
    images = torch.rand(batch, 3, size, size, device=device).to(memory_format=memory)
    labels = torch.arange(-(-batch // 4), device=device).repeat_interleave(4)[:batch]  # 4 a class; the last fewer

    def step():
        loss, _, _ = train_step(model, criterion, optimizers, images, labels, bf16=bf16)
        loss.item()

    step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return batch * steps / (time.perf_counter() - start)


def run(steps: int = 5) -> dict:
    cpu = torch.device("cpu")
    rows = [
        {
            "device": "cpu",
            "backbone": b,
            "size": s,
            "batch": 32,
            "setting": "plain",
            "images_per_s": images_per_second(b, s, 32, cpu, steps=steps),
        }
        for b, s in (("small_cnn", 32), ("resnet18", 64))
    ]
    gpu_note = "no GPU"
    if torch.cuda.is_available():
        gpu = torch.device("cuda")
        gpu_note = torch.cuda.get_device_name(gpu)
        for setting, options in (
            ("plain", {}),
            ("bf16", {"bf16": True}),
            ("channels_last", {"channels_last": True}),
            ("bf16+channels_last", {"bf16": True, "channels_last": True}),
        ):
            rows.append(
                {
                    "device": "cuda",
                    "backbone": "resnet50",
                    "size": 224,
                    "batch": 64,
                    "setting": setting,
                    "images_per_s": images_per_second("resnet50", 224, 64, gpu, steps=steps, **options),
                }
            )
    for row in rows:
        print(
            f"training step {row['device']} {row['backbone']} {row['size']} px "
            f"{row['setting']}: {row['images_per_s']:.0f} img/s",
            flush=True,
        )
    return {"rows": rows, "gpu": gpu_note}


if __name__ == "__main__":
    run()
