"""PKU VehicleID: the publisher's layout (fixture), its count checks, and both test protocols."""

import numpy as np
import pytest

from dmlbench.data.prepare import prepare
from dmlbench.core.errors import DatasetError
from dmlbench.evaluation.metrics import retrieval_metrics, vehicleid_metrics


def test_fixture_in_the_real_layout_gives_nested_test_lists_and_models(tmp_path):
    out = tmp_path / "fixture" / "vehicleid" / "manifest.csv"
    table = prepare("vehicleid", "fixture", tmp_path, out, fixture_size={"n_classes": 12, "per_class": 3})
    vehicles = {split: set(rows["label"]) for split, rows in table.groupby("split")}
    assert vehicles["test_small"] < vehicles["test_medium"] < vehicles["test_large"]
    assert not vehicles["train"] & vehicles["test_large"]
    assert all(p.startswith("raw/VehicleID_V1.0/image/") and p.endswith(".jpg") for p in table["path"])
    labelled = table.drop_duplicates("label").set_index("label")["super"]
    assert labelled[1] == "1" and labelled[2] == "none"  # odd vehicles have model vehicle % 3


def test_real_counts_are_checked_and_the_difference_named(tmp_path):
    fixture = tmp_path / "fx" / "fixture" / "vehicleid" / "manifest.csv"
    prepare("vehicleid", "fixture", tmp_path / "fx", fixture, fixture_size={"n_classes": 8, "per_class": 2})
    out = tmp_path / "real" / "vehicleid" / "manifest.csv"
    with pytest.raises(DatasetError, match="train images: expected 113346, found 8.*test_small classes: expected 800"):
        prepare("vehicleid", "real", tmp_path, out, user_path=str(fixture.parent / "raw"))
    assert not out.exists()


def test_without_the_data_it_says_how_to_get_it(tmp_path):
    with pytest.raises(DatasetError, match="licence request.*pku-vehicleid.*data.paths.vehicleid"):
        prepare("vehicleid", "real", tmp_path, tmp_path / "real" / "vehicleid" / "manifest.csv")


def clustered(n_vehicles=12, per=4, dim=16, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_vehicles, dim))
    labels = np.repeat(np.arange(n_vehicles), per)
    return (centres[labels] + 0.9 * rng.normal(size=(len(labels), dim))).astype(np.float32), labels


def test_all_vs_all_is_the_dml_protocol():
    x, y = clustered()
    ours = vehicleid_metrics(x, y, (1, 5), "all_vs_all", clustering=False)
    assert ours == retrieval_metrics(x, y, (1, 5), clustering=False)


def test_one_gallery_image_per_vehicle_averages_ten_draws():
    x, y = clustered(seed=1)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    recalls = {1: [], 5: []}
    for seed in range(10):  # brute force: the same draws, every query ranked by cosine
        rng = np.random.default_rng(seed)
        gallery = np.array([rng.choice(np.flatnonzero(y == v)) for v in np.unique(y)])
        queries = [i for i in range(len(y)) if i not in set(gallery)]
        for k in recalls:
            hits = [y[i] in y[gallery[np.argsort(-(unit[gallery] @ unit[i]))[:k]]] for i in queries]
            recalls[k].append(np.mean(hits))
    ours = vehicleid_metrics(x, y, (1, 5), "one_gallery_per_vehicle")
    assert ours["recall@1"] == pytest.approx(np.mean(recalls[1]))
    assert ours["recall@5"] == pytest.approx(np.mean(recalls[5]))
