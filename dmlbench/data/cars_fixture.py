"""Cars196 fixtures in each of the three layouts the parser recognises (original, devkit, class
folders): synthetic images under the publisher's file names, and the annotation files."""

from __future__ import annotations

import tarfile
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from dmlbench.data.fixture_images import add_bytes, class_image, image_size_of, jpeg, split_stats
from dmlbench.data.manifest import SplitStats


def write_cars_annos(path: Path, records: list[tuple], class_names: list[str]) -> None:
    """A `cars_annos.mat` as the publisher's: struct array `annotations` with fields
    relative_im_path, bbox_x1, bbox_y1, bbox_x2, bbox_y2, class, test; cell array `class_names`."""
    from scipy.io import savemat

    fields = ["relative_im_path", "bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2", "class", "test"]
    annotations = np.array(records, dtype=[(f, object) for f in fields])
    names = np.array(class_names, dtype=object)
    savemat(path, {"annotations": annotations[None, :], "class_names": names[None, :]})


def _cars_images(n_classes: int, per_class: int, rng, image_size: int):
    """(class 1..n, index within class, image) of a Cars196 fixture, the same in every layout."""
    for c in range(1, n_classes + 1):
        for k in range(per_class):
            yield c, k, class_image(1000 + c, rng, image_size_of(rng, image_size))


def cars_class_names(n_classes: int) -> list[str]:
    """Names as the devkit has them; one with a '/', as in 'Ram C/V Cargo Van Minivan 2012'."""
    return [f"Fixture Car {c}" if c != 2 else "Fixture C/V Van 2" for c in range(1, n_classes + 1)]


def write_fixture(
    folder: Path, n_classes: int, per_class: int, rng, image_size: int, layout: str = "original"
) -> SplitStats:
    """Cars196 in one of its layouts: `original` (car_ims.tgz + cars_annos.mat), `devkit`
    (cars_train.tgz, cars_test.tgz, car_devkit.tgz, cars_test_annos_withlabels.mat) or `folders`
    (the class-folder zip pytorch-metric-learning downloads)."""
    images = list(_cars_images(n_classes, per_class, rng, image_size))
    names = cars_class_names(n_classes)
    {"original": _cars_original, "devkit": _cars_devkit, "folders": _cars_folders}[layout](folder, images, names)
    classes = [c for c, _, _ in images]
    return split_stats(classes, ["train" if c <= n_classes // 2 else "test" for c in classes])


def _cars_original(folder: Path, images, names) -> None:
    records = []
    with tarfile.open(folder / "car_ims.tgz", "w:gz") as archive:
        for c, k, image in images:
            rel = f"car_ims/{len(records) + 1:06d}.jpg"
            add_bytes(archive, rel, jpeg(image))
            records.append((rel, 1, 1, image.width - 1, image.height - 1, c, k % 2))
    write_cars_annos(folder / "cars_annos.mat", records, names)


def _devkit_annotations(path: Path, records: list[tuple], with_class: bool = True) -> None:
    from scipy.io import savemat

    fields = ["bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2"] + (["class"] if with_class else []) + ["fname"]
    rows = [r if with_class else r[:4] + r[5:] for r in records]
    annotations = np.array(rows, dtype=[(f, object) for f in fields])
    savemat(path, {"annotations": annotations[None, :]})


def _cars_devkit(folder: Path, images, names) -> None:
    """The devkit's own split (alternate images of every class) is not the zero-shot split."""
    from scipy.io import savemat

    records = {"train": [], "test": []}
    with (
        tarfile.open(folder / "cars_train.tgz", "w:gz") as train,
        tarfile.open(folder / "cars_test.tgz", "w:gz") as test,
    ):
        for c, k, image in images:
            split = "train" if k % 2 == 0 else "test"
            fname = f"{len(records[split]) + 1:05d}.jpg"
            add_bytes(train if split == "train" else test, f"cars_{split}/{fname}", jpeg(image))
            records[split].append((1, 1, image.width - 1, image.height - 1, c, fname))
    with tempfile.TemporaryDirectory() as tmp:
        devkit = Path(tmp) / "devkit"
        devkit.mkdir()
        savemat(devkit / "cars_meta.mat", {"class_names": np.array(names, dtype=object)[None, :]})
        _devkit_annotations(devkit / "cars_train_annos.mat", records["train"])
        _devkit_annotations(devkit / "cars_test_annos.mat", records["test"], with_class=False)
        with tarfile.open(folder / "car_devkit.tgz", "w:gz") as archive:
            archive.add(devkit, arcname="devkit")
    _devkit_annotations(folder / "cars_test_annos_withlabels.mat", records["test"])


def _cars_folders(folder: Path, images, names) -> None:
    rows = {"train": [], "test": []}
    with zipfile.ZipFile(folder / "stanford-car-dataset-by-classes-folder.zip", "w") as archive:
        for c, k, image in images:
            split = "train" if k % 2 == 0 else "test"
            fname = f"{len(rows['train']) + len(rows['test']) + 1:05d}.jpg"
            archive.writestr(f"car_data/car_data/{split}/{names[c - 1].replace('/', '-')}/{fname}", jpeg(image))
            rows[split].append(f"{fname},1,1,{image.width - 1},{image.height - 1},{c}")
        archive.writestr("names.csv", "\n".join(names) + "\n")
        for split in ("train", "test"):
            archive.writestr(f"anno_{split}.csv", "\n".join(rows[split]) + "\n")
