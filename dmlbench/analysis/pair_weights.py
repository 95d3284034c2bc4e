"""ms Figure 1: the weight each loss gives a pair as a function of the pair's cosine similarity.

By Theorem 3.1 the weight of pair (i, j) is w_ij = -∂L/∂S_ij for a positive pair and ∂L/∂S_ij for
a negative pair. The curves are computed by differentiating the suite's own loss implementations
(`loss.compute` on a one-anchor similarity row), not from the closed forms, so the figure shows
what training actually does. One pair's similarity sweeps [-1, 1]; the others stay fixed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from dmlbench.core.io import atomic_path
from dmlbench.methods import losses
from dmlbench.methods.pairs import PairBatch

# Per loss: its parameters and the fixed similarities of the anchor's other positive and negative
# pairs. Contrastive and triplet get one partner pair (one triplet); lifted and binomial a group.
ONE_PARTNER = {"positives": [0.5], "negatives": [0.5]}
GROUP = {"positives": [0.5, 0.6, 0.7], "negatives": [0.0, 0.1, 0.2, 0.3, 0.4]}
CONTEXT = {
    "contrastive": ({"neg_margin": 0.5}, ONE_PARTNER, True),
    "triplet": ({"margin": 0.1}, ONE_PARTNER, True),
    "lifted": ({"margin": 1.0}, GROUP, False),
    "binomial": ({"alpha": 2.0, "beta": 50.0, "gamma": 0.5}, GROUP, False),
}
TITLES = {
    "contrastive": "(a) contrastive, λ = 0.5",
    "triplet": "(b) triplet, λ = 0.1",
    "lifted": "(c) lifted structure, λ = 1",
    "binomial": "(d) binomial, α=2, β=50, γ=0.5",
}


def one_anchor_batch(positives: list[float], negatives: list[float]) -> PairBatch:
    """A 1 × (1 + P + N) similarity row: the anchor itself, then its positives, then negatives."""
    row = torch.tensor([[1.0] + positives + negatives], dtype=torch.float64, requires_grad=True)
    n_pos, n_neg = len(positives), len(negatives)
    pos = torch.tensor([[False] + [True] * n_pos + [False] * n_neg])
    neg = torch.tensor([[False] + [False] * n_pos + [True] * n_neg])
    return PairBatch(sim=row, pos=pos, neg=neg)


def pair_weights(name: str, params: dict, positives: list[float], negatives: list[float]) -> np.ndarray:
    """Theorem 3.1 weights of every pair of the row: -∂L/∂S on positives, ∂L/∂S on negatives."""
    batch = one_anchor_batch(positives, negatives)
    loss = losses.build(name, **params)
    (grad,) = torch.autograd.grad(loss.compute(batch), batch.sim, allow_unused=True)
    grad = torch.zeros_like(batch.sim) if grad is None else grad
    sign = torch.where(batch.pos, -1.0, 1.0)
    return (sign * grad)[0, 1:].numpy()


def curves(grid: np.ndarray) -> pd.DataFrame:
    """Weight of the varied positive pair and of the varied negative pair, per loss and similarity.

    With `single` contexts the varied pair replaces the partner of its own kind (one positive and
    one negative pair in all); otherwise it joins the fixed group."""
    rows = []
    for name, (params, others, single) in CONTEXT.items():
        for s in map(float, grid):
            positives = [s] + ([] if single else others["positives"])
            w = pair_weights(name, params, positives, others["negatives"])
            rows.append({"loss": name, "pair": "positive", "similarity": s, "weight": float(w[0])})
            negatives = [s] + ([] if single else others["negatives"])
            w = pair_weights(name, params, others["positives"], negatives)
            rows.append(
                {"loss": name, "pair": "negative", "similarity": s, "weight": float(w[len(others["positives"])])}
            )
    return pd.DataFrame(rows)


def figure(table: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(16, 3.4))
    for ax, (name, title) in zip(axes, TITLES.items()):
        part = table[table["loss"] == name]
        for pair, style in (("positive", dict(color="green", ls="-")), ("negative", dict(color="blue", ls=":"))):
            rows = part[part["pair"] == pair]
            ax.plot(rows["similarity"], rows["weight"], label=f"{pair} pair", lw=2, **style)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("cosine similarity")
        ax.set_ylabel("weight w = |∂L/∂S|")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("ms.f1: pair weight against similarity (autograd of the suite's losses)", fontsize=10)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def run(output_dir: Path, spec: dict) -> None:
    """Write `weights.csv`, `figure.png` and `summary.md` of ms.f1 into `output_dir`."""
    output_dir.mkdir(parents=True, exist_ok=True)
    table = curves(np.linspace(-1.0, 1.0, 201))
    with atomic_path(output_dir / "weights.csv") as tmp:
        table.to_csv(tmp, index=False)
    figure(table, output_dir / "figure.png")
    lines = [
        f"# {spec['experiment']}: {spec['title']}",
        "",
        "Weights from autograd of the suite's loss implementations (Theorem 3.1: w = -∂L/∂S for "
        "positive pairs, ∂L/∂S for negative pairs), one anchor; the other pairs fixed at: ",
    ]
    for name, (params, others, single) in CONTEXT.items():
        kind = "the partner pair" if single else "the other pairs"
        lines.append(f"- {name} {params}: {kind}: positives {others['positives']}, negatives {others['negatives']}")
    with atomic_path(output_dir / "summary.md") as tmp:
        tmp.write_text("\n".join(lines) + "\n")
