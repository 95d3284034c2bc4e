"""The trunk-ranking figure's numbers (`dmlbench.plots.ranking`): Recall@1 per method and trunk
taken from the experiment's table, the papers' printed numbers only for the methods run, and
Kendall's τ checked against a count of concordant and discordant pairs written from its
definition."""

from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from dmlbench.plots import ranking

SPEC = {
    "trunks": {"a": {"backbone": "vit_s16_dino", "label": "ViT-S"}, "b": {"backbone": "dinov2_s14", "label": "DINOv2"}},
    "paper_recall": {"ms": {"cub": ["66.85", "ms.t2"]}, "fastap": {"cub": ["70.0", "x"]}},
}


def brute_force_tau(x, y) -> float:
    """(concordant − discordant) / number of pairs, for values without ties."""
    signs = [np.sign(x[i] - x[j]) * np.sign(y[i] - y[j]) for i, j in combinations(range(len(x)), 2)]
    return sum(signs) / len(signs)


def table(values: dict) -> pd.DataFrame:
    """A table.csv of runs `method@variant` → Recall@1 on cub, plus a trunk reference row."""
    rows = [
        {
            "dataset": "cub",
            "method": m,
            "metric": "recall@1",
            "mean": v,
            "half": 1.0,
            "n": 5,
            "reference": False,
            "kind": None,
            "name": None,
        }
        for m, v in values.items()
    ]
    rows.append(
        {
            "dataset": "cub",
            "method": "no training: DINOv2, CLS token",
            "metric": "recall@1",
            "mean": 55.0,
            "half": np.nan,
            "n": 1,
            "reference": True,
            "kind": "trunk",
            "name": "cub-dinov2_s14-224px-128d-ab",
        }
    )
    return pd.DataFrame(rows)


def test_kendalls_tau_is_the_count_of_concordant_pairs():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(3, 9))
        x, y = rng.permutation(n) + 0.5, rng.permutation(n) + 0.25
        values = pd.DataFrame(
            {
                "dataset": "cub",
                "method": [f"m{i}" for i in range(n)] * 2,
                "trunk": ["A"] * n + ["B"] * n,
                "recall@1": [*x, *y],
            }
        )
        taus = ranking.kendall(values)
        assert len(taus) == 1 and taus.loc[0, "methods"] == n
        assert taus.loc[0, "tau"] == pytest.approx(brute_force_tau(x, y))
        assert 0 <= taus.loc[0, "p_value"] <= 1


def test_the_same_order_on_two_trunks_gives_tau_one():
    summary = table({"ms@a": 60, "contrastive@a": 50, "fastap@a": 70, "ms@b": 80, "contrastive@b": 75, "fastap@b": 85})
    values = ranking.recall_at_1(summary, SPEC)
    taus = ranking.kendall(values).set_index(["trunk_a", "trunk_b"])
    assert taus.loc[("ViT-S", "DINOv2"), "tau"] == pytest.approx(1.0)
    papers = values[values["trunk"] == ranking.PAPERS].set_index("method")["recall@1"]
    assert papers.to_dict() == {"ms": 66.85, "fastap": 70.0}  # only the methods run, as printed
    assert ranking.untrained(summary, SPEC) == {("cub", "DINOv2"): 55.0}


def test_the_figure_and_its_data_are_written(tmp_path):
    table({"ms@a": 60, "contrastive@a": 50, "ms@b": 40, "contrastive@b": 45}).to_csv(
        tmp_path / "table.csv", index=False
    )
    ranking.trunk_ranking([], dict(SPEC, toy_data=True), tmp_path)
    taus = pd.read_csv(tmp_path / "kendall.csv").set_index(["trunk_a", "trunk_b"])
    assert taus.loc[("ViT-S", "DINOv2"), "tau"] == pytest.approx(-1.0)  # the order reversed
    assert (tmp_path / "trunk_ranking.png").stat().st_size > 0
    assert "| cub | ViT-S | DINOv2 | 2 | -1.00 |" in (tmp_path / "kendall.md").read_text()
