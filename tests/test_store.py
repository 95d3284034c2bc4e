"""Decoded-image store: the same tensors as the per-image path, refused when stale, atomic."""

import dataclasses
import shutil

import numpy as np
import pytest
import torch
from PIL import Image

from dmlbench.data import batches, draws, images, manifest, store
from dmlbench.data.prepare import prepare
from dmlbench.core.errors import DatasetError
from dmlbench.run_config import RunConfig

pytestmark = pytest.mark.xdist_group("test_store")  # one worker: its module fixture once


@pytest.fixture(scope="module")
def cub(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    path = root / "fixture" / "cub" / "manifest.csv"
    prepare("cub", "fixture", root, path, fixture_size={"n_classes": 6, "per_class": 5, "image_size": 50})
    return path


def cfg_for(path, folder, crop=28, padding=3, flip=True):
    return {
        "data": {"manifest": str(path), "store": str(folder) if folder else None},
        "input": {"resize": 32, "crop": crop, "padding": padding, "flip": flip},
    }


def loaded_batches(data, seed, train, workers=0):
    """Every batch of one pass, drawn as training draws them (shuffled, each image's draw keyed)."""
    generator = torch.Generator().manual_seed(seed)
    if train:
        order = torch.utils.data.RandomSampler(data, generator=generator)
        sampler = draws.KeyedBatches(torch.utils.data.BatchSampler(order, 7, drop_last=False), seed, 0)
        loader = batches.loader(data, batch_sampler=sampler, num_workers=workers)
    else:
        loader = batches.loader(data, batch_size=7, shuffle=False, num_workers=workers)
    return [data.device_batch(b, torch.device("cpu")) for b in loader]


class StoredPixelsPerImage(torch.utils.data.Dataset):
    """The per-image transforms applied to the stored pixels themselves."""

    def __init__(self, pixels, rows, labels, transform):
        self.pixels, self.rows, self.labels, self.transform = pixels, rows, labels, transform

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, item):
        i, key = item
        return self.transform(Image.fromarray(np.array(self.pixels[self.rows[i]])), key), int(self.labels[i])

    collate = staticmethod(torch.utils.data.default_collate)

    def device_batch(self, loaded, device):
        return loaded[0].to(device), loaded[1]


@pytest.mark.parametrize(
    "padding, flip, crop, side", [(3, True, 28, 32), (0, True, 32, 32), (0, False, 24, 32), (0, True, 43, 48)]
)  # BN-Inception's 227 of 256: odd margin
def test_store_batches_equal_the_per_image_path(cub, tmp_path, padding, flip, crop, side):
    folder = tmp_path / f"store{side}"
    store.build(cub, folder, side, log=lambda m: None)
    table = manifest.read(cub)
    rows = table.index[table["split"] == "train"]
    raw = cfg_for(cub, folder, crop, padding, flip)
    raw["input"]["resize"] = side
    cfg = RunConfig.from_dict(raw)
    from_store = batches.split_images(table, rows, cub.parent, cfg, train=True)
    pixels = store.open_pixels(folder, cub, side)
    per_image = StoredPixelsPerImage(
        pixels, np.asarray(rows), table.loc[rows, "label"].to_numpy(), images.TrainTransform(cfg.input)
    )
    from_files = dataclasses.replace(cfg, data={"manifest": str(cub)})
    files = batches.split_images(table, rows, cub.parent, from_files, train=True)
    for seed in (0, 1):
        ours = loaded_batches(from_store, seed, train=True)
        for reference in (per_image, files):  # the stored pixels, and the JPEG files decoded anew
            theirs = loaded_batches(reference, seed, train=True)
            assert len(ours) == len(theirs)
            for (a, la), (b, lb) in zip(ours, theirs):
                assert torch.equal(a, b) and torch.equal(la, lb)
    # in a loader worker (the same keyed draws, pixels through shared memory)
    for (a, la), (b, lb) in zip(
        loaded_batches(from_store, 2, True, workers=1), loaded_batches(files, 2, True, workers=1)
    ):
        assert torch.equal(a, b) and torch.equal(la, lb)
    test_rows = table.index[table["split"] == "test"]
    centre = loaded_batches(batches.split_images(table, test_rows, cub.parent, cfg, train=False), 0, False)
    plain = loaded_batches(batches.split_images(table, test_rows, cub.parent, from_files, train=False), 0, False)
    assert all(torch.equal(a, b) for (a, _), (b, _) in zip(centre, plain))


@pytest.mark.parametrize("padding", [0, 3])
def test_the_gpu_gather_crops_as_the_cpu_copies(padding):
    """The GPU's path (one gather), run here on the CPU, against the CPU's per-image copies."""
    generator = torch.Generator().manual_seed(padding)
    pixels = torch.randint(0, 256, (9, 32, 32, 3), dtype=torch.uint8, generator=generator)
    top, left = (torch.randint(0, 2 * padding + 32 - 24 + 1, (9,), generator=generator) for _ in range(2))
    flip = torch.rand(9, generator=generator) < 0.5
    copies = batches.crop_and_flip(pixels, top, left, flip, 24, padding, gather=False)
    gathered = batches.crop_and_flip(pixels, top, left, flip, 24, padding, gather=True)
    assert torch.equal(copies, gathered) and flip.any() and not flip.all()


@pytest.mark.parametrize(
    "device, gather", [("cpu", False), ("cpu", True)] + ([("cuda", True)] if torch.cuda.is_available() else [])
)
def test_batches_hold_totensors_values_on_every_device(device, gather):
    """The crop of every image equals ToTensor's tensor, bit for bit, on the run's device: a GPU
    divides by 255 as a multiplication by 1/255, off by one bit for some values, which
    BN-Inception's ×255 turned into different losses for the store and the JPEG paths."""
    from torchvision.transforms.functional import to_tensor

    generator = torch.Generator().manual_seed(0)
    pixels = torch.randint(0, 256, (4, 48, 48, 3), dtype=torch.uint8, generator=generator)
    pixels[0, :16, :16] = torch.arange(256, dtype=torch.uint8).view(16, 16, 1)  # every value
    top, left = torch.tensor([0, 5, 2, 1]), torch.tensor([0, 1, 5, 3])
    flip = torch.tensor([False, True, False, True])
    expected = []
    for image, t, l, mirrored in zip(pixels, top.tolist(), left.tolist(), flip.tolist()):
        crop = to_tensor(image.numpy())[:, t : t + 43, l : l + 43]
        expected.append(crop.flip(2) if mirrored else crop)
    ours = batches.crop_and_flip(
        pixels.to(device), top.to(device), left.to(device), flip.to(device), 43, 0, gather=gather
    )
    assert torch.equal(ours.cpu(), torch.stack(expected))


def test_a_store_of_another_manifest_is_refused(cub, tmp_path):
    folder = tmp_path / "store32"
    store.build(cub, folder, 32, log=lambda m: None)
    changed = tmp_path / "manifest.csv"
    table = manifest.read(cub)
    table.loc[0, "label"] = 99
    manifest.write(table, changed)
    with pytest.raises(DatasetError, match="does not match: built from another version"):
        store.open_pixels(folder, changed, 32)
    with pytest.raises(DatasetError, match="side 32, not 40"):
        store.open_pixels(folder, cub, 40)
    manifest.write(table.iloc[:-1], changed)
    with pytest.raises(DatasetError, match="images, the manifest has"):
        store.open_pixels(folder, changed, 32)


def test_an_interrupted_build_leaves_no_store_that_would_be_used(cub, tmp_path, monkeypatch):
    folder = tmp_path / "store32"
    real = store.decode
    calls = []

    def decode_then_stop(path, side):
        calls.append(path)
        if len(calls) == 10:
            raise KeyboardInterrupt
        return real(path, side)

    monkeypatch.setattr(store, "decode", decode_then_stop)
    with pytest.raises(KeyboardInterrupt):
        store.build(cub, folder, 32, log=lambda m: None)
    assert not folder.exists()
    with pytest.raises(DatasetError, match="not a complete decoded-image store"):
        store.open_pixels(folder, cub, 32)
    # what a SIGKILL leaves (a half-written folder without store.json) is refused too
    folder.mkdir()
    np.save(folder / "pixels.npy", np.zeros((3, 32, 32, 3), dtype=np.uint8))
    with pytest.raises(DatasetError, match="not a complete decoded-image store"):
        store.open_pixels(folder, cub, 32)


def test_unreadable_images_are_named_and_nothing_is_written(cub, tmp_path):
    table = manifest.read(cub)
    broken = tmp_path / "data"
    broken.mkdir()
    (broken / "bad.jpg").write_bytes(b"not a jpeg")
    shutil.copy(cub.parent / table.loc[1, "path"], broken / "good.jpg")
    table = table.iloc[:2].assign(path=["data/bad.jpg", "data/good.jpg"])
    path = tmp_path / "m.csv"
    manifest.write(table, path)
    with pytest.raises(DatasetError, match="1 of 2 images .* cannot be decoded, e.g. .*bad.jpg"):
        store.build(path, tmp_path / "store32", 32, log=lambda m: None)
    assert not (tmp_path / "store32").exists()
    info_size = store.size_bytes(120053, 256)
    assert round(info_size / 2**30, 1) == 22.0  # SOP at 256²: what the build announces


def test_a_killed_build_leaves_a_temporary_that_the_rerun_removes(cub, tmp_path):
    """kill -9 during `store`: its hidden temporary stays (nothing can clean up after -9); the
    next build removes it before counting free space, and the doctor reports one it finds."""
    import signal
    import subprocess
    import sys

    from dmlbench import doctor
    from dmlbench.core.io import stale_temporaries

    from conftest import python_env
    from processes import start, stop

    folder = tmp_path / "data" / "store32"
    code = (
        "import sys, time; from pathlib import Path; from dmlbench.data import store\n"
        "def decode(path, side):  # the build stops at its first image, inside its temporary\n"
        "    print('decoding', flush=True); time.sleep(60)\n"
        "store.decode = decode\n"
        "store.build(Path(sys.argv[1]), Path(sys.argv[2]), 32, log=lambda m: None)\n"
    )
    process = start(
        [sys.executable, "-c", code, str(cub), str(folder)], stdout=subprocess.PIPE, text=True, env=python_env()
    )
    try:
        assert process.stdout.readline().strip() == "decoding"
        process.send_signal(signal.SIGKILL)
    finally:
        stop(process)
    left = stale_temporaries(folder.parent)
    assert len(left) == 1 and left[0].name.startswith(".store32.") and not folder.exists()

    class Plan:
        preset = {"data": {"root": str(tmp_path)}}

    check = doctor.stale_check(Plan())
    assert check is not None and check.status == doctor.ACTION and str(left[0]) in check.detail
    store.build(cub, folder, 32, log=lambda m: None)
    assert not left[0].exists() and (folder / "store.json").exists()
    assert doctor.stale_check(Plan()) is None


def test_a_damaged_cached_image_sets_the_cache_aside_so_that_a_rerun_makes_it_again(tmp_path):
    """The cache's images are the suite's own copies: one that cannot be decoded sets the cached
    manifest aside (the cache step then runs again from the originals), as docs/interrupted-runs.md says."""
    from dmlbench.data import cache, store
    from dmlbench.data.prepare import prepare
    from dmlbench.core.errors import DatasetError

    source = tmp_path / "fixture" / "cub" / "manifest.csv"
    prepare("cub", "fixture", tmp_path, source, fixture_size={"n_classes": 8, "per_class": 4, "image_size": 48})
    cached = source.parent / "cache40" / "manifest.csv"
    cache.build(source, cached, 40)
    victim = next((cached.parent / "images").rglob("*.jpg"))
    victim.write_bytes(victim.read_bytes()[:40])
    with pytest.raises(
        DatasetError,
        match=r"the suite's cached copies: "
        r"their manifest is set aside as manifest.csv.corrupt",
    ):
        store.build(cached, cached.parent / "store40", 40, log=lambda m: None)
    assert not cached.exists() and (cached.parent / "manifest.csv.corrupt").exists()
    cache.build(source, cached, 40)  # what the rerun's cache step does
    store.build(cached, cached.parent / "store40", 40, log=lambda m: None)
    assert (cached.parent / "store40" / "store.json").exists()
