"""ephn.f2 / ephn.f5: the paper's closed forms against a direct autograd step on unit vectors,
and the paper's qualitative claims about the corner near (1, 1)."""

import numpy as np
import pytest
import torch

from dmlbench.analysis import triplet_updates as tu
from dmlbench.core.errors import DmlbenchError

S_VALUES = np.array([0.0, 0.13, 0.5, 0.77, 0.95, 0.999])


def grid():
    s_ap, s_an = np.meshgrid(S_VALUES, S_VALUES)
    return s_ap.ravel(), s_an.ravel()


@pytest.mark.parametrize("loss", ["1st", "vanilla", "2nd"])
@pytest.mark.parametrize("gamma", [0.0, 0.2, 0.5, 0.8, 1.0])
@pytest.mark.parametrize("step", [0.05, 0.3])
def test_closed_form_equals_direct_autograd_step(loss, gamma, step):
    s_ap, s_an = grid()
    closed = tu.closed_form(loss, s_ap, s_an, gamma, step)
    direct = tu.direct(loss, s_ap, s_an, gamma, step)
    for c, d in zip(closed, direct):
        np.testing.assert_allclose(c, d, rtol=0, atol=1e-12)
    assert np.abs(closed[0]).max() > 1e-4  # the step does move the triplets


def test_unit_triplets_have_the_requested_similarities_and_gamma():
    s_ap, s_an = grid()
    f_a, f_p, f_n = tu.unit_triplets(s_ap, s_an, 0.3)
    for f in (f_a, f_p, f_n):
        np.testing.assert_allclose(f.norm(dim=1).numpy(), 1.0, atol=1e-15)
    np.testing.assert_allclose((f_a * f_p).sum(1).numpy(), s_ap, atol=1e-15)
    np.testing.assert_allclose((f_a * f_n).sum(1).numpy(), s_an, atol=1e-15)
    np.testing.assert_allclose((f_p * f_n).sum(1).numpy(), tu.s_pn(s_ap, s_an, 0.3), atol=1e-15)


@pytest.mark.parametrize("gamma", [0.2, 0.8])
def test_vanilla_similarity_updates_are_eqs_38_39(gamma):
    """Dot products of the moved (not re-normalised) features against eqs. 38-39 with β = 2α,
    written out here from the appendix."""
    s_ap, s_an = grid()
    step = 0.25
    beta = 2 * step
    (f_a, f_p, f_n), (a, p, n) = tu.gradient_step("vanilla", s_ap, s_an, gamma, step)
    pn = s_ap * s_an + gamma * np.sqrt(1 - s_ap**2) * np.sqrt(1 - s_an**2)
    eq38 = (1 - beta + beta**2) * s_ap + 2 * beta - beta**2 - beta * (1 - beta) * pn - beta**2 * s_an
    eq39 = (1 + beta + beta**2) * s_an - 2 * beta - beta**2 + beta * (1 + beta) * pn - beta**2 * s_ap
    np.testing.assert_allclose((a * p).sum(1).numpy(), eq38, atol=1e-13)
    np.testing.assert_allclose((a * n).sum(1).numpy(), eq39, atol=1e-13)
    np.testing.assert_allclose(
        p.norm(dim=1).numpy() ** 2, (1 - beta + beta * s_ap) ** 2 + beta**2 * (1 - s_ap**2), atol=1e-13
    )


def test_first_order_similarity_updates_are_eqs_7_8():
    s_ap, s_an = grid()
    step, gamma = 0.4, 0.5
    (_, _, _), (a, p, n) = tu.gradient_step("1st", s_ap, s_an, gamma, step)
    beta = step * np.exp(s_an) / (np.exp(s_ap) + np.exp(s_an))
    pn = tu.s_pn(s_ap, s_an, gamma)
    np.testing.assert_allclose(
        (a * p).sum(1).numpy(), (1 + beta**2) * s_ap + 2 * beta - beta * pn - beta**2 * s_an, atol=1e-13
    )
    np.testing.assert_allclose(
        (a * n).sum(1).numpy(), (1 + beta**2) * s_an - 2 * beta + beta * pn - beta**2 * s_ap, atol=1e-13
    )


def test_entanglement_is_eqs_11_12():
    t_ap, t_an = tu.entangled(np.array([0.81]), np.array([0.25]), np.array([0.1]), np.array([-0.2]), 0.5)
    q = 0.5 * np.sqrt(0.81 * 0.25)
    assert t_ap[0] == pytest.approx(0.1 + q * -0.2) and t_an[0] == pytest.approx(-0.2 + q * 0.1)


@pytest.mark.parametrize("experiment", ["ephn.f2", "ephn.f5"])
def test_paper_claims_near_one_one(experiment):
    """Under L1st with entanglement, triplets near (1, 1) get ΔS_an_total > 0 (the negative is
    pulled closer); under L2nd that region is smaller, for every γ and p of the figure."""
    data = tu.field(experiment, grid=np.linspace(0, 1, 26))
    shares = tu.corner_shares(data, tu.SETTINGS[experiment]["ps"]).set_index(["loss", "gamma", "p"])
    for (loss, gamma, p), row in shares.iterrows():
        if loss != "1st":
            continue
        first = row["share_dS_an_total_positive"]
        second = shares.loc[("2nd", gamma, p), "share_dS_an_total_positive"]
        assert first >= 0.1, (gamma, p, first)
        assert second < first, (gamma, p, first, second)


def test_field_refuses_disagreeing_computations(monkeypatch):
    monkeypatch.setattr(tu, "s_pn", lambda s_ap, s_an, gamma: s_ap * s_an)  # drops γ's term
    with pytest.raises(DmlbenchError, match="differ"):
        tu.field("ephn.f2", grid=np.linspace(0, 1, 6))


def test_analysis_writes_its_report(tmp_path):
    spec = {"experiment": "ephn.f2", "title": "Figure 2", "paper": "ephn", "analysis": "triplet_updates"}
    tu.run(tmp_path, spec)
    for name in ("summary.md", "figure.png", "field.csv", "corner.csv"):
        assert (tmp_path / name).stat().st_size > 0
    assert "largest difference" in (tmp_path / "summary.md").read_text()


def test_vanilla_direct_form_is_the_suites_distance_triplet_loss():
    """The vanilla simulation differentiates `triplet_distance`: [D_ap² - D_an² + m]_+ (eq. 28)."""
    f_a, f_p, f_n = tu.unit_triplets(np.array([0.3]), np.array([0.6]), 0.5)
    s_ap, s_an = tu.similarities("vanilla", f_a, f_p, f_n)
    from dmlbench.methods import losses

    value = losses.build("triplet_distance", margin=0.7).triplet_terms(s_ap, s_an)
    expected = (f_a - f_p).pow(2).sum() - (f_a - f_n).pow(2).sum() + 0.7
    assert value.item() == pytest.approx(torch.clamp(expected, min=0).item(), abs=1e-14)


def test_unknown_settings_are_named(tmp_path):
    with pytest.raises(DmlbenchError, match="no setting for 'ephn.f9'"):
        tu.run(tmp_path, {"experiment": "ephn.f9", "title": "x"})
    with pytest.raises(ValueError, match="unknown loss 'third'"):
        tu.closed_form("third", np.array([0.5]), np.array([0.5]), 0.5)
