"""dro.eq: the identities of dro sections 3.1 and 3.3, checked numerically on random batches.

Each check computes one quantity two independent ways and reports the largest difference:
1. DRO-KL-G with γ = 1 (margin loss, no pair clipped) has the gradient of the lifted-structure
   loss L_LS = Σ_i [log Σ_{P_i} e^{λ-S} + log Σ_{N_i} e^{S-λ}]_+ (eqs. 3, 19-22); L_LS is the
   suite's `lifted` loss (margin 0) times B, since λ cancels.
2. DRO-KL-G with one zero-loss pseudo pair per group, γ+ = 1/α, γ- = 1/β has the gradient of MS
   with threshold c+ = λ + m for positives and c- = λ - m for negatives (supplement 6.1.2); with
   m = 0 (linear pair loss) that is the suite's `multi_similarity` loss times B.
3. The top-K uncertainty set {Σp = 1, 0 ≤ p ≤ 1/K} gives the mean of the K largest losses (a
   linear program solved by scipy).
4. The χ² set {p ∈ Δ, ½ Σ (n p_i - 1)² / n ≤ ρ/n} gives mean + sqrt(2ρ Var_n / n) when the
   optimal p stays non-negative (solved by scipy's SLSQP).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from dmlbench.core.io import atomic_path
from dmlbench.methods import losses
from dmlbench.methods.pairs import PairBatch


def random_batch(seed: int, classes: int = 4, per_class: int = 4, dim: int = 16):
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(classes).repeat_interleave(per_class)
    return torch.randn(len(labels), dim, generator=g, dtype=torch.float64), labels


def gradient(loss, embeddings, labels) -> torch.Tensor:
    x = embeddings.clone().requires_grad_(True)
    return torch.autograd.grad(loss(x, labels), x)[0]


def lifted_structure_gradients(seed: int, lam: float = 0.5, margin: float = 2.5):
    """DRO-KL-G γ=1 vs lifted structure (every margin pair loss positive: m large)."""
    e, y = random_batch(seed)
    dro = losses.build("dro_kl_g", gamma=1.0, base="margin", margin=margin, lam=lam).double()
    lifted = losses.build("lifted", margin=0.0).double()
    batch_size = len(y)
    return gradient(dro, e, y), batch_size * gradient(lifted, e, y)


def ms_gradients(seed: int, alpha=2.0, beta=50.0, lam=0.5, margin=0.1):
    """DRO-KL-G with pseudo pairs vs MS with thresholds c± = λ ± m (margin loss, none clipped)."""
    e, y = random_batch(seed)
    dro = losses.build(
        "dro_kl_g", gamma_pos=1 / alpha, gamma_neg=1 / beta, pseudo_pair=True, base="linear", margin=margin, lam=lam
    ).double()
    ms_pos = losses.build("multi_similarity", alpha=alpha, beta=beta, gamma=lam + margin).double()
    ms_neg = losses.build("multi_similarity", alpha=alpha, beta=beta, gamma=lam - margin).double()

    def two_threshold_ms(x, labels):
        b = PairBatch.from_embeddings(x, labels)
        none = torch.zeros_like(b.pos)
        return ms_pos.compute(b.with_pairs(b.pos, none)) + ms_neg.compute(b.with_pairs(none, b.neg))

    return gradient(dro, e, y), len(y) * gradient(two_threshold_ms, e, y)


def topk_lp(seed: int, n: int = 40, k: int = 7):
    """max Σ p l s.t. Σ p = 1, 0 ≤ p ≤ 1/K, by linear programming, vs the top-K mean."""
    from scipy.optimize import linprog

    l = np.random.default_rng(seed).exponential(size=n)
    res = linprog(-l, A_eq=np.ones((1, n)), b_eq=[1.0], bounds=[(0, 1 / k)] * n, method="highs")
    return -res.fun, np.sort(l)[-k:].mean()


def chi2_set(seed: int, n: int = 30, rho: float = 0.5):
    """sup over the χ² ball vs mean + sqrt(2ρ Var_n / n); returns (solver, closed form, p ≥ 0?)."""
    from scipy.optimize import minimize

    l = np.random.default_rng(seed).normal(1.0, 0.3, size=n)
    constraints = [
        {"type": "eq", "fun": lambda p: p.sum() - 1},
        {"type": "ineq", "fun": lambda p: rho / n - 0.5 * np.sum((n * p - 1) ** 2) / n},
    ]
    res = minimize(
        lambda p: -p @ l,
        np.full(n, 1 / n),
        jac=lambda p: -l,
        bounds=[(0, 1)] * n,
        constraints=constraints,
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    )
    closed = l.mean() + np.sqrt(2 * rho * l.var() / n)
    # the closed form's maximiser: p = 1/n + sqrt(2ρ/n)·(l - mean) / (n·sqrt(n·Var)); non-negative?
    p_closed = 1 / n + np.sqrt(2 * rho / n) * (l - l.mean()) / (n * np.sqrt(n * l.var()))
    return -res.fun, closed, bool((p_closed >= 0).all())


def table(seeds=range(5)) -> pd.DataFrame:
    rows = []
    for seed in seeds:
        a, b = lifted_structure_gradients(seed)
        rows.append(
            {
                "identity": "DRO-KL-G(γ=1) gradient = lifted structure gradient",
                "seed": seed,
                "max_abs_difference": float((a - b).abs().max()),
                "scale": float(b.abs().max()),
            }
        )
        a, b = ms_gradients(seed)
        rows.append(
            {
                "identity": "DRO-KL-G(pseudo, γ±=1/α,1/β) gradient = MS(c±=λ±m) gradient",
                "seed": seed,
                "max_abs_difference": float((a - b).abs().max()),
                "scale": float(b.abs().max()),
            }
        )
        lp, mean = topk_lp(seed)
        rows.append(
            {
                "identity": "top-K set optimum = mean of K largest losses",
                "seed": seed,
                "max_abs_difference": abs(lp - mean),
                "scale": abs(mean),
            }
        )
        solver, closed, valid = chi2_set(seed)
        rows.append(
            {
                "identity": "χ² set optimum = mean + sqrt(2ρ Var/n)" + ("" if valid else " (condition fails)"),
                "seed": seed,
                "max_abs_difference": abs(solver - closed),
                "scale": abs(closed),
            }
        )
    return pd.DataFrame(rows)


def run(output_dir: Path, spec: dict) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    frame = table()
    with atomic_path(output_dir / "identities.csv") as tmp:
        frame.to_csv(tmp, index=False)
    worst = frame.groupby("identity", sort=False)["max_abs_difference"].max()
    lines = [
        f"# {spec['experiment']}: {spec['title']}",
        "",
        "Each identity computed two independent ways on 5 random batches (float64); largest "
        "absolute difference over the seeds:",
    ]
    lines += [f"- {name}: {value:.2e}" for name, value in worst.items()]
    with atomic_path(output_dir / "summary.md") as tmp:
        tmp.write_text("\n".join(lines) + "\n")
    _figure(output_dir / "figure.png")


def _figure(path: Path) -> None:
    from dmlbench.plots.agreement import agreement

    panels = []
    for name, fn in (
        ("DRO-KL-G(γ=1) vs lifted structure", lifted_structure_gradients),
        ("DRO-KL-G(pseudo pairs) vs MS", ms_gradients),
    ):
        dro, reference = fn(0)
        panels.append((name, reference, dro))
    agreement(
        panels,
        "reference loss gradient",
        "DRO gradient",
        "dro.eq: gradients w.r.t. the embeddings, one random batch",
        path,
    )
