"""fastap.grad: the supplement's closed-form FastAP gradient (eqs. 17-30) against autograd.

Both paths of the suite's `fastap` loss run on the same batches (float64): random unit embeddings
of several batch sizes, and batches built so that distances fall exactly on bin centres (one-hot
rows: orthogonal pairs at d = 2, duplicates at d = 0), under both bin conventions. Reported: the
largest absolute and relative difference of the gradients, and a scatter of one batch's entries.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import torch

from dmlbench.core.io import atomic_path
from dmlbench.methods import losses
from dmlbench.methods.losses.ranking_losses import bin_centres

TOLERANCE = 1e-9  # largest relative difference accepted (float64)


def random_batch(seed: int, classes: int = 8, per_class: int = 4, dim: int = 32):
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(classes).repeat_interleave(per_class)
    return torch.randn(len(labels), dim, generator=g, dtype=torch.float64), labels


def tied_batch(seed: int, dim: int = 8):
    """One-hot rows and duplicates (distances 2 and 0, both bin centres) plus random rows."""
    g = torch.Generator().manual_seed(seed)
    basis = torch.eye(dim, dtype=torch.float64)
    rows = torch.cat([basis, basis[: dim // 2], torch.randn(6, dim, generator=g, dtype=torch.float64)])
    labels = torch.cat([torch.arange(dim) % 4, torch.arange(dim // 2) % 4, torch.arange(6) % 3 + 4])
    return rows, labels


def gradients(embeddings, labels, **params) -> tuple[torch.Tensor, torch.Tensor]:
    out = []
    for path in ("closed_form", "autograd"):
        x = embeddings.clone().requires_grad_(True)
        losses.build("fastap", gradient=path, **params)(x, labels).backward()
        out.append(x.grad)
    return out[0], out[1]


def table() -> pd.DataFrame:
    rows = []
    for bins, num_bins in (("paper", 10), ("code", 10), ("paper", 9)):
        cases = [("random", *random_batch(seed, classes=c)) for seed, c in ((0, 4), (1, 8), (2, 16))]
        cases.append(("ties at bin centres", *tied_batch(3)))
        for kind, e, y in cases:
            closed, auto = gradients(e, y, num_bins=num_bins, bins=bins)
            x = e / e.norm(dim=1, keepdim=True)
            centres, _ = bin_centres(num_bins, bins, e.dtype, "cpu")
            off_diagonal = ~torch.eye(len(y), dtype=torch.bool)
            ties = int(((2 - 2 * x @ x.T)[off_diagonal][:, None] == centres).sum())
            difference = (closed - auto).abs().max().item()
            rows.append(
                {
                    "bins": bins,
                    "num_bins": num_bins,
                    "batch": kind,
                    "size": len(y),
                    "distances_on_centres": ties,
                    "max_abs_difference": difference,
                    "max_relative_difference": difference / max(auto.abs().max().item(), 1e-300),
                }
            )
    return pd.DataFrame(rows)


def run(output_dir: Path, spec: dict) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    frame = table()
    worst = frame["max_relative_difference"].max()
    if worst > TOLERANCE:
        raise ArithmeticError(
            f"closed-form FastAP gradient differs from autograd by {worst:.2e} (relative), more than {TOLERANCE:g}"
        )
    with atomic_path(output_dir / "gradients.csv") as tmp:
        frame.to_csv(tmp, index=False)
    lines = [
        f"# {spec['experiment']}: {spec['title']}",
        "",
        "The suite's FastAP loss with its closed-form backward (supplement eqs. 17-30) and with "
        "autograd, on the same float64 batches; both bin conventions:",
    ]
    lines += [
        f"- {r.bins} bins, L = {r.num_bins}, {r.batch} (M = {r.size}, {r.distances_on_centres} "
        f"distances on bin centres): largest difference {r.max_abs_difference:.2e} "
        f"(relative {r.max_relative_difference:.2e})"
        for r in frame.itertuples()
    ]
    with atomic_path(output_dir / "summary.md") as tmp:
        tmp.write_text("\n".join(lines) + "\n")
    _figure(output_dir / "figure.png")


def _figure(path: Path) -> None:
    from dmlbench.plots.agreement import agreement

    panels = []
    for name, (e, y) in (("random batch, M = 32", random_batch(1)), ("ties at bin centres", tied_batch(3))):
        closed, auto = gradients(e, y)
        panels.append((name, auto, closed))
    agreement(
        panels, "autograd gradient", "closed-form gradient", "fastap.grad: FastAP gradients w.r.t. the embeddings", path
    )
