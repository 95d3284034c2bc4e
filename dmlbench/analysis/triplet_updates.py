"""ephn Figures 2 and 5: how one gradient step on the unit sphere moves a triplet on the triplet
scatter diagram (S_ap, S_an), for L1st (eq. 1), the vanilla margin triplet loss (appendix E) and
L2nd (eq. 16).

Every grid point is computed twice and the two must agree:
- closed form: the paper's new similarities (eqs. 7-8, 23-24, 38-39) with S_pn from eq. 19,
  divided by the norms of the moved features (appendices B, D, E: eqs. 20-22, 25-27, 35-37),
  minus the old similarity (eqs. 9-10);
- direct: unit vectors f_a, f_p, f_n in R³ with the given S_ap, S_an and γ, one step
  f ← f - α ∂L/∂f of the suite's own loss (`triplet_terms` of `triplet_nca`, `triplet_distance`,
  `triplet_2nd`) by autograd, re-normalised, similarities re-measured.
Entanglement (eqs. 11-12) then gives ΔS_total = ΔS + p √(S_ap S_an) ΔS_other.

The step α is not given by the paper; the figures use `STEP` (β = α·softmax weight for L1st/L2nd,
β = 2α for the vanilla loss, whose appendix E writes β = 2 for α = 1). The vanilla loss is
written on squared Euclidean distances of the features, as eq. 28 is (its S = 1 - D²/2), with
margin `VANILLA_MARGIN`, large enough that the hinge is active on the whole square, as appendix E
assumes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from dmlbench.core.errors import DmlbenchError
from dmlbench.core.io import atomic_path
from dmlbench.methods import losses

STEP = 0.1
VANILLA_MARGIN = 2.5
GRID = np.linspace(0.0, 1.0, 51)
AGREEMENT = 1e-9  # closed form vs direct simulation, absolute
NEAR_ONE_ONE = 0.8  # the corner S_ap, S_an ≥ 0.8 where the paper's claims are checked

LOSS_NAMES = {"1st": "triplet_nca", "vanilla": "triplet_distance", "2nd": "triplet_2nd"}
LOSS_TITLES = {"1st": "L1st (eq. 1)", "vanilla": "vanilla triplet (app. E)", "2nd": "L2nd (eq. 16)"}
SETTINGS = {
    "ephn.f2": {"losses": ["1st", "2nd"], "gammas": [0.5], "ps": [0.4, 0.8]},
    "ephn.f5": {"losses": ["1st", "vanilla", "2nd"], "gammas": [0.2, 0.5, 0.8], "ps": [0.4, 0.8]},
}


# --- closed forms ----------------------------------------------------------------------------


def s_pn(s_ap, s_an, gamma):
    """Eq. 19: the positive-negative similarity implied by S_ap, S_an and γ."""
    return s_ap * s_an + gamma * np.sqrt(1 - s_ap**2) * np.sqrt(1 - s_an**2)


def weighted_update(s_ap, s_an, gamma, b_p, b_n):
    """(S_ap_new, S_an_new, |f_a_new|, |f_p_new|, |f_n_new|) when f_p += b_p f_a, f_n -= b_n f_a,
    f_a += b_p f_p - b_n f_n (eqs. 23-27; L1st is the case b_p = b_n = β, eqs. 7-8, 20-22)."""
    pn = s_pn(s_ap, s_an, gamma)
    new_ap = (1 + b_p**2) * s_ap + 2 * b_p - b_n * pn - b_p * b_n * s_an
    new_an = (1 + b_n**2) * s_an - 2 * b_n + b_p * pn - b_p * b_n * s_ap
    norm_p = np.sqrt((1 + b_p * s_ap) ** 2 + b_p**2 * (1 - s_ap**2))
    norm_n = np.sqrt((1 - b_n * s_an) ** 2 + b_n**2 * (1 - s_an**2))
    norm_a = np.sqrt(
        (1 + b_p * s_ap - b_n * s_an) ** 2
        + (b_p * np.sqrt(1 - s_ap**2) - gamma * b_n * np.sqrt(1 - s_an**2)) ** 2
        + (b_n * np.sqrt(1 - gamma**2) * np.sqrt(1 - s_an**2)) ** 2
    )
    return new_ap, new_an, norm_a, norm_p, norm_n


def vanilla_update(s_ap, s_an, gamma, beta):
    """(S_ap_new, S_an_new, |f_a_new|, |f_p_new|, |f_n_new|) of the vanilla triplet loss with an
    active hinge (eqs. 35-39)."""
    pn = s_pn(s_ap, s_an, gamma)
    new_ap = (1 - beta + beta**2) * s_ap + 2 * beta - beta**2 - beta * (1 - beta) * pn - beta**2 * s_an
    new_an = (1 + beta + beta**2) * s_an - 2 * beta - beta**2 + beta * (1 + beta) * pn - beta**2 * s_ap
    norm_p = np.sqrt((1 - beta + beta * s_ap) ** 2 + beta**2 * (1 - s_ap**2))
    norm_n = np.sqrt((1 + beta - beta * s_an) ** 2 + beta**2 * (1 - s_an**2))
    norm_a = np.sqrt(
        (1 + beta * s_ap - beta * s_an) ** 2
        + (beta * np.sqrt(1 - s_ap**2) - gamma * beta * np.sqrt(1 - s_an**2)) ** 2
        + (beta * np.sqrt(1 - gamma**2) * np.sqrt(1 - s_an**2)) ** 2
    )
    return new_ap, new_an, norm_a, norm_p, norm_n


def updated(loss: str, s_ap, s_an, gamma: float, step: float):
    """The paper's new similarities and norms after one step of size `step` (before re-normalising)."""
    if loss == "1st":
        beta = step * np.exp(s_an) / (np.exp(s_ap) + np.exp(s_an))
        return weighted_update(s_ap, s_an, gamma, beta, beta)
    if loss == "2nd":
        e_n = np.exp(0.5 * s_an**2)
        beta_w = step * e_n / (np.exp(s_ap - 0.5 * s_ap**2) + e_n)
        return weighted_update(s_ap, s_an, gamma, (1 - s_ap) * beta_w, s_an * beta_w)
    if loss == "vanilla":
        return vanilla_update(s_ap, s_an, gamma, 2 * step)
    raise ValueError(f"unknown loss {loss!r}; known: {', '.join(LOSS_NAMES)}")


def closed_form(loss: str, s_ap, s_an, gamma: float, step: float = STEP):
    """ΔS_ap, ΔS_an after one step and re-normalisation (eqs. 9-10)."""
    new_ap, new_an, norm_a, norm_p, norm_n = updated(loss, s_ap, s_an, gamma, step)
    return new_ap / (norm_a * norm_p) - s_ap, new_an / (norm_a * norm_n) - s_an


# --- direct simulation -----------------------------------------------------------------------


def unit_triplets(s_ap, s_an, gamma):
    """f_a, f_p, f_n ∈ R³ (one row per grid point) with the given similarities and γ (eq. 19)."""
    s_ap, s_an = torch.as_tensor(s_ap, dtype=torch.float64), torch.as_tensor(s_an, dtype=torch.float64)
    zero, one = torch.zeros_like(s_ap), torch.ones_like(s_ap)
    sin_p, sin_n = torch.sqrt(1 - s_ap**2), torch.sqrt(1 - s_an**2)
    f_a = torch.stack([one, zero, zero], dim=1)
    f_p = torch.stack([s_ap, sin_p, zero], dim=1)
    f_n = torch.stack([s_an, gamma * sin_n, np.sqrt(1 - gamma**2) * sin_n], dim=1)
    return f_a, f_p, f_n


def similarities(loss: str, f_a, f_p, f_n):
    """(S_ap, S_an) as the loss sees them: dot products, or 1 - D²/2 for the vanilla loss (eq. 28)."""
    if loss == "vanilla":
        return 1 - (f_a - f_p).pow(2).sum(1) / 2, 1 - (f_a - f_n).pow(2).sum(1) / 2
    return (f_a * f_p).sum(1), (f_a * f_n).sum(1)


def gradient_step(loss: str, s_ap, s_an, gamma: float, step: float = STEP):
    """Unit f_a, f_p, f_n and f - α ∂L/∂f (not re-normalised), by autograd of the suite's loss."""
    params = {"margin": VANILLA_MARGIN} if loss == "vanilla" else {}
    criterion = losses.build(LOSS_NAMES[loss], **params)
    f_a, f_p, f_n = (f.requires_grad_() for f in unit_triplets(s_ap, s_an, gamma))
    before_ap, before_an = similarities(loss, f_a, f_p, f_n)
    grads = torch.autograd.grad(criterion.triplet_terms(before_ap, before_an).sum(), (f_a, f_p, f_n))
    before = tuple(f.detach() for f in (f_a, f_p, f_n))
    return before, tuple(f - step * g for f, g in zip(before, grads))


def direct(loss: str, s_ap, s_an, gamma: float, step: float = STEP):
    """ΔS_ap, ΔS_an from one autograd step of the suite's loss on unit vectors, re-normalised."""
    (f_a, f_p, f_n), moved = gradient_step(loss, s_ap, s_an, gamma, step)
    new_a, new_p, new_n = (torch.nn.functional.normalize(f, dim=1) for f in moved)
    d_ap = (new_a * new_p).sum(1) - (f_a * f_p).sum(1)
    d_an = (new_a * new_n).sum(1) - (f_a * f_n).sum(1)
    return d_ap.numpy(), d_an.numpy()


def entangled(s_ap, s_an, d_ap, d_an, p: float):
    """Eqs. 11-12: ΔS_total with entanglement strength p and q = √(S_ap S_an)."""
    q = p * np.sqrt(s_ap * s_an)
    return d_ap + q * d_an, d_an + q * d_ap


# --- the figure data -------------------------------------------------------------------------


def field(experiment: str, grid: np.ndarray = GRID, step: float = STEP) -> pd.DataFrame:
    """Every (loss, γ, S_ap, S_an) of the experiment: both computations, their difference and
    the entangled changes for each p. Raises if the two computations disagree."""
    setting = SETTINGS[experiment]
    s_ap, s_an = (a.ravel() for a in np.meshgrid(grid, grid, indexing="xy"))
    frames = []
    for loss in setting["losses"]:
        for gamma in setting["gammas"]:
            c_ap, c_an = closed_form(loss, s_ap, s_an, gamma, step)
            d_ap, d_an = direct(loss, s_ap, s_an, gamma, step)
            frame = pd.DataFrame(
                {
                    "loss": loss,
                    "gamma": gamma,
                    "s_ap": s_ap,
                    "s_an": s_an,
                    "dS_ap": c_ap,
                    "dS_an": c_an,
                    "direct_dS_ap": d_ap,
                    "direct_dS_an": d_an,
                }
            )
            frame["disagreement"] = np.maximum(np.abs(c_ap - d_ap), np.abs(c_an - d_an))
            for p in setting["ps"]:
                t_ap, t_an = entangled(s_ap, s_an, c_ap, c_an, p)
                frame[f"total_dS_ap_p{p}"], frame[f"total_dS_an_p{p}"] = t_ap, t_an
            frames.append(frame)
    data = pd.concat(frames, ignore_index=True)
    worst = data["disagreement"].max()
    if not worst <= AGREEMENT:
        raise DmlbenchError(
            f"{experiment}: closed form and direct simulation differ by {worst:.3g} "
            f"(> {AGREEMENT}); a formula or a loss is wrong"
        )
    return data


def corner_shares(data: pd.DataFrame, ps: list[float]) -> pd.DataFrame:
    """Per loss, γ and p: the share of the corner S_ap, S_an ≥ 0.8 where the negative is pulled
    closer (ΔS_an_total > 0) and where the positive is pushed away (ΔS_ap_total < 0)."""
    corner = data[(data["s_ap"] >= NEAR_ONE_ONE) & (data["s_an"] >= NEAR_ONE_ONE)]
    rows = []
    for (loss, gamma), part in corner.groupby(["loss", "gamma"], sort=False):
        for p in ps:
            rows.append(
                {
                    "loss": loss,
                    "gamma": gamma,
                    "p": p,
                    "share_dS_an_total_positive": float((part[f"total_dS_an_p{p}"] > 0).mean()),
                    "share_dS_ap_total_negative": float((part[f"total_dS_ap_p{p}"] < 0).mean()),
                }
            )
    return pd.DataFrame(rows)


def summary_text(experiment: str, spec: dict, data: pd.DataFrame, shares: pd.DataFrame) -> str:
    setting = SETTINGS[experiment]
    lines = [
        f"# {experiment}: {spec['title']}",
        "",
        f"Grid {len(GRID)}×{len(GRID)} over [0, 1]², step α = {STEP} (vanilla β = 2α, margin "
        f"{VANILLA_MARGIN}); γ ∈ {setting['gammas']}, p ∈ {setting['ps']}.",
        f"Closed form (eqs. 7-10, 19-27, 35-39) against the direct autograd simulation: largest "
        f"difference {data['disagreement'].max():.2e} (required ≤ {AGREEMENT:g}).",
        "",
        f"In the corner S_ap, S_an ≥ {NEAR_ONE_ONE} (hard negatives with easy positives):",
        "",
    ]
    for row in shares.itertuples():
        lines.append(
            f"- {LOSS_TITLES[row.loss]}, γ = {row.gamma}, p = {row.p}: negative pulled "
            f"closer (ΔS_an_total > 0) on {100 * row.share_dS_an_total_positive:.1f} % of "
            f"the corner, positive pushed away (ΔS_ap_total < 0) on "
            f"{100 * row.share_dS_ap_total_negative:.1f} %"
        )
    lines += [
        "",
        "Files: `field.csv` (every grid point, both computations), `corner.csv`, "
        "`figure.png` (sign regions and vector fields; one figure per γ, `figure_gamma<γ>.png` for the "
        "others).",
    ]
    return "\n".join(lines) + "\n"


def run(output_dir: Path, spec: dict) -> None:
    from dmlbench.plots.sphere_fields import draw_fields

    experiment = spec["experiment"]
    if experiment not in SETTINGS:
        raise DmlbenchError(f"analysis triplet_updates has no setting for {experiment!r}; known: {', '.join(SETTINGS)}")
    output_dir.mkdir(parents=True, exist_ok=True)
    data = field(experiment)
    shares = corner_shares(data, SETTINGS[experiment]["ps"])
    for name, frame in (("field.csv", data), ("corner.csv", shares)):
        with atomic_path(output_dir / name) as tmp:
            frame.to_csv(tmp, index=False)
    short = {"1st": "L1st", "vanilla": "vanilla", "2nd": "L2nd"}
    draw_fields(data, SETTINGS[experiment], short, f"{experiment}: {spec['title']}", output_dir / "figure.png")
    with atomic_path(output_dir / "summary.md") as tmp:
        tmp.write_text(summary_text(experiment, spec, data, shares))
