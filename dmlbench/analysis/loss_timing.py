"""dro.f3: mean time per iteration of the loss side against batch size.

The loss side is what a method adds to the network's forward/backward: the similarity matrix,
mining or weighting, the loss and the backward pass to the embeddings. Measured on this machine's
CPU (or GPU when present) with d = 1024, M = 5 images per class, K = 2B, γ = 0.1, as the paper
sets them; the paper's Figure 3 times whole iterations on eight GPUs, which only a GPU run gives.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F

from dmlbench import losses, miners
from dmlbench.io import atomic_path

BATCHES = (80, 160, 320, 480, 640)
DIM, PER_CLASS = 1024, 5

METHODS = {
    "DRO-TopK_M": (("dro_topk", {"k_per_anchor": 2.0}), None),
    "DRO-TopK-PN_M": (("dro_topk_pn", {"k_per_anchor": 2.0}), None),
    "DRO-KL_M": (("dro_kl", {"gamma": 0.1}), None),
    "SH": (("pair_margin", {}), ("semihard", {"margin": 0.1})),
    "DWS": (("pair_margin", {}), ("distance_weighted", {})),
    "MS": (("multi_similarity", {}), ("multi_similarity", {"epsilon": 0.1})),
    "LS": (("lifted", {"margin": 1.0}), None),
}


def time_method(loss_spec, miner_spec, batch: int, repeats: int, device) -> list[float]:
    loss = losses.build(loss_spec[0], **loss_spec[1]).to(device)
    miner = miners.build(miner_spec[0], **miner_spec[1]) if miner_spec else None
    labels = torch.arange(batch // PER_CLASS, device=device).repeat_interleave(PER_CLASS)
    base = F.normalize(torch.randn(batch, DIM, device=device), dim=1)
    times = []
    for step in range(repeats + 1):
        x = base.clone().requires_grad_(True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        loss(x, labels, miner=miner).backward()
        if device.type == "cuda":
            torch.cuda.synchronize()
        if step:  # the first call warms up
            times.append(time.perf_counter() - start)
    return times


def measure(repeats: int = 5, batches=BATCHES) -> pd.DataFrame:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    rows = []
    for name, (loss_spec, miner_spec) in METHODS.items():
        for batch in batches:
            times = time_method(loss_spec, miner_spec, batch, repeats, device)
            rows.append({"method": name, "batch": batch, "mean_ms": 1000 * statistics.mean(times),
                         "std_ms": 1000 * statistics.stdev(times) if len(times) > 1 else 0.0,
                         "repeats": len(times), "device": str(device)})
    return pd.DataFrame(rows)


def run(output_dir: Path, spec: dict, repeats: int = 5) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    output_dir.mkdir(parents=True, exist_ok=True)
    frame = measure(repeats)
    with atomic_path(output_dir / "timing.csv") as tmp:
        frame.to_csv(tmp, index=False)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, rows in frame.groupby("method", sort=False):
        ax.errorbar(rows["batch"], rows["mean_ms"], yerr=rows["std_ms"], marker="o", label=name,
                    capsize=3)
    ax.set_xlabel("batch size B")
    ax.set_ylabel("loss side, ms per iteration")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"dro.f3: loss-side time per iteration ({frame['device'].iloc[0]}, d = {DIM})",
                 fontsize=9)
    with atomic_path(output_dir / "figure.png") as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    largest = frame[frame["batch"] == frame["batch"].max()].sort_values("mean_ms")
    lines = [f"# {spec['experiment']}: {spec['title']}", "",
             f"Loss side only (similarities, mining/weighting, loss, backward to the embeddings), "
             f"mean of {repeats} iterations after one warm-up, on {frame['device'].iloc[0]}. "
             f"At B = {frame['batch'].max()}:"]
    lines += [f"- {r.method}: {r.mean_ms:.1f} ± {r.std_ms:.1f} ms" for r in largest.itertuples()]
    with atomic_path(output_dir / "summary.md") as tmp:
        tmp.write_text("\n".join(lines) + "\n")
