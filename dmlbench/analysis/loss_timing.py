"""dro.f3: mean time per iteration against batch size.

The loss side is what a method adds to the network's forward/backward: the similarity matrix,
mining or weighting, the loss and the backward pass to the embeddings. It is measured everywhere,
with d = 1024, M = 5 images per class, K = 2B, γ = 0.1, as the paper sets them, for the
catalogue's methods (the spec's `methods`: the same SH, DWS, MS and LS as the dro paper's other
figures and tables). On a GPU the
whole iteration is timed as well (BN-Inception forward and backward on 227 × 227 images plus the
loss side, as the paper's Figure 3 does on its eight GPUs).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F

from dmlbench.core.io import atomic_path
from dmlbench.methods import losses, miners

BATCHES = (80, 160, 320, 480, 640)
DIM, PER_CLASS = 1024, 5


def time_method(method: dict, batch: int, repeats: int, device, network=None, image_size: int = 227) -> list[float]:
    """Seconds per iteration: loss side only, or with `network` its forward and backward too."""
    loss = losses.build(**method["loss"]).to(device)
    miner = miners.build(**method["miner"]) if method.get("miner") else None
    labels = torch.arange(batch // PER_CLASS, device=device).repeat_interleave(PER_CLASS)
    if network is None:
        inputs = F.normalize(torch.randn(batch, DIM, device=device), dim=1)
    else:
        inputs = torch.rand(batch, 3, image_size, image_size, device=device)
    times = []
    for step in range(repeats + 1):
        x = inputs.clone().requires_grad_(network is None)
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        embeddings = x if network is None else network(x)
        loss(embeddings, labels, miner=miner).backward()
        if device.type == "cuda":
            torch.cuda.synchronize()
        if step:  # the first call warms up
            times.append(time.perf_counter() - start)
    return times


def measure(
    methods: dict,
    repeats: int = 5,
    batches=BATCHES,
    whole_iteration: bool | None = None,
    backbone: str = "bninception",
    image_size: int = 227,
) -> pd.DataFrame:
    """Loss-side times of `methods` (name → label, loss, miner), and whole-iteration times when
    `whole_iteration` (default: on a GPU)."""
    from dmlbench.models.embedding import EmbeddingNet

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    whole_iteration = device.type == "cuda" if whole_iteration is None else whole_iteration
    torch.manual_seed(0)
    network = EmbeddingNet(backbone, DIM, pretrained=False).to(device).train() if whole_iteration else None
    rows = []
    for method in methods.values():
        for batch in batches:
            for scope, net in (("loss side", None), ("whole iteration", network)):
                if scope == "whole iteration" and net is None:
                    continue
                times = time_method(method, batch, repeats, device, net, image_size)
                rows.append(
                    {
                        "method": method["label"],
                        "batch": batch,
                        "scope": scope,
                        "mean_ms": 1000 * statistics.mean(times),
                        "std_ms": 1000 * statistics.stdev(times) if len(times) > 1 else 0.0,
                        "repeats": len(times),
                        "device": str(device),
                    }
                )
    return pd.DataFrame(rows)


def run(output_dir: Path, spec: dict, repeats: int = 5) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    output_dir.mkdir(parents=True, exist_ok=True)
    frame = measure(spec["methods"], repeats)
    with atomic_path(output_dir / "timing.csv") as tmp:
        frame.to_csv(tmp, index=False)
    scopes = list(dict.fromkeys(frame["scope"]))
    fig, axes = plt.subplots(1, len(scopes), figsize=(6 * len(scopes), 4), squeeze=False)
    for ax, scope in zip(axes[0], scopes):
        for name, rows in frame[frame["scope"] == scope].groupby("method", sort=False):
            ax.errorbar(rows["batch"], rows["mean_ms"], yerr=rows["std_ms"], marker="o", label=name, capsize=3)
        ax.set_xlabel("batch size B")
        ax.set_ylabel(f"{scope}, ms per iteration")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title(f"dro.f3: {scope} ({frame['device'].iloc[0]}, d = {DIM})", fontsize=9)
    with atomic_path(output_dir / "figure.png") as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    largest = frame[frame["batch"] == frame["batch"].max()].sort_values(["scope", "mean_ms"])
    lines = [
        f"# {spec['experiment']}: {spec['title']}",
        "",
        f"Loss side: similarities, mining/weighting, loss, backward to the embeddings"
        f"{'; whole iteration: BN-Inception forward/backward as well' if len(scopes) > 1 else ''}"
        f"{'' if len(scopes) > 1 else ' (no GPU here, so no whole-iteration timing)'}"
        f". Mean of {repeats} iterations after one warm-up, on {frame['device'].iloc[0]}. "
        f"At B = {frame['batch'].max()}:",
    ]
    lines += [f"- {r.method} ({r.scope}): {r.mean_ms:.1f} ± {r.std_ms:.1f} ms" for r in largest.itertuples()]
    with atomic_path(output_dir / "summary.md") as tmp:
        tmp.write_text("\n".join(lines) + "\n")
