"""The cache and store steps on several processes: the same files and pixels as on one, every
unreadable image named whichever worker met it, nothing written then."""

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from dmlbench.data import cache, parallel, store
from dmlbench.data.prepare import prepare
from dmlbench.core.errors import DatasetError

pytestmark = pytest.mark.xdist_group("test_parallel_decoding")  # one worker: its module fixture once


@pytest.fixture(scope="module")
def cub(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    path = root / "fixture" / "cub" / "manifest.csv"
    prepare("cub", "fixture", root, path, fixture_size={"n_classes": 8, "per_class": 6, "image_size": 60})
    return path


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(parallel, "BLOCK", 5)  # many blocks from a small fixture


def test_the_cache_on_three_workers_equals_the_cache_on_one(cub, tmp_path, small_blocks):
    one, three = tmp_path / "one" / "manifest.csv", tmp_path / "three" / "manifest.csv"
    cache.build(cub, one, 32, workers=1)
    cache.build(cub, three, 32, workers=3)
    assert one.read_text() == three.read_text()
    for rel in pd.read_csv(one)["path"]:
        assert (one.parent / rel).read_bytes() == (three.parent / rel).read_bytes(), rel


def test_the_store_on_three_workers_holds_each_image_resized_by_hand(cub, tmp_path, small_blocks):
    store.build(cub, tmp_path / "store", 24, log=lambda m: None, workers=3)
    pixels = store.open_pixels(tmp_path / "store", cub, 24)
    table = pd.read_csv(cub)
    assert len(table) > 4 * parallel.BLOCK
    for row, rel in enumerate(table["path"]):
        with Image.open(cub.parent / rel) as image:
            expected = np.asarray(image.convert("RGB").resize((24, 24), Image.Resampling.BILINEAR))
        assert np.array_equal(pixels[row], expected), rel


@pytest.mark.parametrize("step", ["cache", "store"])
def test_unreadable_images_met_by_different_workers_are_all_named(cub, tmp_path, small_blocks, step):
    data = tmp_path / "copy"
    table = pd.read_csv(cub)
    broken = [table["path"].iloc[1], table["path"].iloc[len(table) - 2]]  # first and last blocks
    for rel in table["path"]:
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        (data / rel).write_bytes((cub.parent / rel).read_bytes())
    for rel in broken:
        (data / rel).write_bytes(b"not an image")
    table.to_csv(data / "manifest.csv", index=False)
    out = tmp_path / "out"
    with pytest.raises(DatasetError) as error:
        if step == "cache":
            cache.build(data / "manifest.csv", out / "manifest.csv", 32, workers=3)
        else:
            store.build(data / "manifest.csv", out / "store", 24, log=lambda m: None, workers=3)
    assert "2 of" in str(error.value) and all(rel in str(error.value) for rel in broken)
    assert not (out / "manifest.csv").exists() and not (out / "images").exists()
    assert not (out / "store").exists()
