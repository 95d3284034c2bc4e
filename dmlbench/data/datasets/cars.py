"""Cars196 (Krause et al. 2013): 16,185 images of 196 car models; classes 1-98 train, 99-196 test.
The publisher's addresses no longer serve it: three layouts people have today are recognised
(original, devkit, class folders), each with a fixture writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dmlbench.data.cars_fixture import write_fixture
from dmlbench.data.datasets import register
from dmlbench.data.datasets.spec import DatasetSpec, Layout, SourceFile, find_file, read_lines, repeated
from dmlbench.data.manifest import SplitStats, half_split
from dmlbench.core.errors import DatasetError

CARS_MANUAL = (
    "Cars196's original addresses no longer serve it. Put the files of one of its layouts in "
    "{folder} (or set data.paths.cars to the folder holding them, or the extracted copy): "
    "car_ims.tgz + cars_annos.mat; or cars_train.tgz + cars_test.tgz + car_devkit.tgz + "
    "cars_test_annos_withlabels.mat (the copies on Kaggle and Hugging Face have this layout); or "
    "the class-folder copy (names.csv, anno_train.csv, anno_test.csv, car_data/car_data/). Then rerun."
)

CARS_DEVKIT = "https://ai.stanford.edu/~jkrause/car196/"  # 404 since 2023; the layout lives on in copies


def parse_cars(root: Path) -> pd.DataFrame:
    """Cars196 in any of its three layouts; classes 1-98 train, 99-196 test:
    - original: `cars_annos.mat` (struct array `annotations`) + `car_ims/`;
    - devkit: `devkit/cars_train_annos.mat`, `cars_test_annos_withlabels.mat`, `cars_train/`,
      `cars_test/` (the class ids are the same 1-196);
    - class folders (pytorch-metric-learning's copy): `names.csv`, `anno_{train,test}.csv`,
      `car_data/car_data/{train,test}/<class name>/`, class id = line of `names.csv`."""
    if _find_optional(root, "cars_annos.mat"):
        return _parse_cars_original(root)
    if _find_optional(root, "cars_train_annos.mat"):
        return _parse_cars_devkit(root)
    if _find_optional(root, "anno_train.csv"):
        return _parse_cars_folders(root)
    raise DatasetError(
        f"{root}: no Cars196 annotation file found (cars_annos.mat, "
        f"devkit/cars_train_annos.mat or anno_train.csv): is this the extracted dataset?"
    )


def _find_optional(root: Path, name: str) -> Path | None:
    try:
        return find_file(root, name)
    except DatasetError:
        return None


def _load_annotations(mat_path: Path, fields: tuple[str, ...]):
    from scipy.io import loadmat

    try:
        annotations = loadmat(mat_path, squeeze_me=True)["annotations"]
    except Exception as error:  # scipy raises several types for a broken file
        raise DatasetError(f"{mat_path} is not a readable annotation file: {error}") from None
    missing = [f for f in fields if f not in (getattr(getattr(annotations, "dtype", None), "names", None) or ())]
    if missing:
        raise DatasetError(f"{mat_path}: the annotations lack fields {missing}; is this the right file?")
    return np.atleast_1d(annotations)


def _class_id(value) -> int:
    number = float(value)
    if not number.is_integer() or number < 1:
        raise ValueError
    return int(number)


def _file_name(value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError
    return value


def _values(mat_path: Path, annotations, field: str) -> list:
    """Every annotation's `field` (a class id ≥ 1, or an image path); a value that is not one stops,
    naming the file, the annotation and the value."""
    convert, wanted = (_class_id, "a class id (an integer ≥ 1)") if field == "class" else (_file_name, "an image path")
    values = []
    for number, value in enumerate(annotations[field], 1):
        try:
            values.append(convert(value))
        except (TypeError, ValueError):
            raise DatasetError(
                f"{mat_path}: annotation {number} has {field} = {value!r}, not {wanted}; use an intact copy of the file"
            ) from None
    return values


def _parse_cars_original(root: Path) -> pd.DataFrame:
    mat_path = find_file(root, "cars_annos.mat")
    annotations = _load_annotations(mat_path, ("relative_im_path", "class"))
    paths = _values(mat_path, annotations, "relative_im_path")
    repeated(
        paths,
        f"{mat_path}: the image",
        "annotation",
        "each image is annotated once in the published file: use an intact copy of it",
    )
    labels = _values(mat_path, annotations, "class")
    prefix = mat_path.parent.relative_to(root)
    out = pd.DataFrame({"path": [str(prefix / p) for p in paths], "label": labels, "super": ""})
    return half_split(out)


def _check_listed_equals_present(mat_path: Path, folder: Path, listed: list[str]) -> None:
    """Copies exist whose annotation files belong to other images: stop when the names differ."""
    present = {p.name for p in folder.glob("*.jpg")}
    missing, unlisted = sorted(set(listed) - present), sorted(present - set(listed))
    if missing or unlisted or len(listed) != len(set(listed)):
        raise DatasetError(
            f"{mat_path} does not belong to the images in {folder}: it lists {len(listed)} images, "
            f"the folder holds {len(present)}; {len(missing)} listed but absent (e.g. "
            f"{missing[:3]}), {len(unlisted)} present but not listed (e.g. {unlisted[:3]}). Use the "
            f"annotation files that came with these images (cars_test_annos_withlabels.mat for "
            f"cars_test/)."
        )


def _parse_cars_devkit(root: Path) -> pd.DataFrame:
    parts = []
    for mat_name, folder_name in (
        ("cars_train_annos.mat", "cars_train"),
        ("cars_test_annos_withlabels.mat", "cars_test"),
    ):
        mat_path = find_file(root, mat_name)
        folder = find_file(root, folder_name)
        annotations = _load_annotations(mat_path, ("fname", "class"))
        names = _values(mat_path, annotations, "fname")
        repeated(
            names,
            f"{mat_path}: the image",
            "annotation",
            "each image is annotated once in the published file: use an intact copy of it",
        )
        _check_listed_equals_present(mat_path, folder, names)
        prefix = folder.relative_to(root)
        parts.append(
            pd.DataFrame(
                {
                    "path": [str(prefix / n) for n in names],
                    "label": _values(mat_path, annotations, "class"),
                    "super": "",
                }
            )
        )
    return half_split(pd.concat(parts, ignore_index=True))


def _plain_file_name(name: str) -> bool:
    """A file name without any folder part (so it cannot point outside its folder)."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


def _parse_cars_folders(root: Path) -> pd.DataFrame:
    names_csv = find_file(root, "names.csv")
    names = [line.strip() for line in read_lines(names_csv) if line.strip()]
    base = names_csv.parent
    parts = []
    for split in ("train", "test"):
        annos = base / f"anno_{split}.csv"
        if not annos.exists():
            raise DatasetError(
                f"{annos} is missing: the class-folder copy needs names.csv, "
                f"anno_train.csv and anno_test.csv side by side"
            )
        numbered = [(n, line.split(",")) for n, line in enumerate(read_lines(annos), 1) if line.strip()]
        bad = [n for n, r in numbered if len(r) < 2 or not r[-1].strip().isdigit() or not 1 <= int(r[-1]) <= len(names)]
        if bad:
            raise DatasetError(f"{annos}: line {bad[0]} is not '<image>,x1,y1,x2,y2,<class 1-{len(names)}>'")
        outside = [(n, r[0]) for n, r in numbered if not _plain_file_name(r[0])]
        if outside:
            raise DatasetError(
                f"{annos}: line {outside[0][0]} names the image {outside[0][1]!r}; "
                f"images are plain file names inside their class folder (no path). "
                f"Fix the line, or use an intact copy of the list."
            )
        rows = [r for _, r in numbered]
        folder = base / "car_data" / "car_data" / split
        parts.append(
            pd.DataFrame(
                {
                    "path": [
                        str((folder / names[int(r[-1]) - 1].replace("/", "-") / r[0]).relative_to(root)) for r in rows
                    ],
                    "label": [int(r[-1]) for r in rows],
                    "super": "",
                }
            )
        )
    return half_split(pd.concat(parts, ignore_index=True))


SPEC = register(
    DatasetSpec(
        "cars",
        "Cars196",
        (
            Layout(
                "original (car_ims.tgz + cars_annos.mat)",
                (
                    SourceFile(
                        "car_ims.tgz",
                        (f"{CARS_DEVKIT}car_ims.tgz", "http://imagenet.stanford.edu/internal/car196/car_ims.tgz"),
                        md5="d5c8f0aa497503f355e17dc7886c3f14",
                    ),
                    SourceFile(
                        "cars_annos.mat",
                        (f"{CARS_DEVKIT}cars_annos.mat", "http://imagenet.stanford.edu/internal/car196/cars_annos.mat"),
                        md5="b407c6086d669747186bd1d764ff9dbc",
                    ),
                ),
            ),
            Layout(
                "devkit (cars_train/test.tgz + car_devkit.tgz)",
                (
                    SourceFile(
                        "cars_train.tgz",
                        (f"{CARS_DEVKIT}cars_train.tgz",),
                        size=979_269_282,
                        sha256="512b227b30e2f0a8aab9e09485786ab4479582073a144998da74d64b801fd288",
                    ),
                    SourceFile(
                        "cars_test.tgz",
                        (f"{CARS_DEVKIT}cars_test.tgz",),
                        size=977_350_468,
                        sha256="bffea656d6f425cba3c91c6d83336e4c5f86c6cffd8975b0f375d3a10da8e243",
                    ),
                    SourceFile(
                        "car_devkit.tgz",
                        ("https://ai.stanford.edu/~jkrause/cars/car_devkit.tgz",),
                        size=330_960,
                        sha256="b97deb463af7d58b6bfaa18b2a4de9829f0f79e8ce663dfa9261bf7810e9accd",
                    ),
                    SourceFile(
                        "cars_test_annos_withlabels.mat",
                        (f"{CARS_DEVKIT}cars_test_annos_withlabels.mat",),
                        size=185_758,
                        sha256="790f75be8ea34eeded134cc559332baf23e30e91367e9ddca97d26ed9b895f05",
                    ),
                ),
            ),
            Layout(
                "class folders (pytorch-metric-learning's copy)",
                (
                    SourceFile(
                        "stanford-car-dataset-by-classes-folder.zip",
                        (
                            "https://www.kaggle.com/api/v1/datasets/download/jutrera/"
                            "stanford-car-dataset-by-classes-folder",
                        ),
                    ),
                ),
            ),
        ),
        SplitStats({"train": 8054, "test": 8131}, {"train": 98, "test": 98}),
        parse_cars,
        manual=CARS_MANUAL,
        disk_gb=4.5,
        label="Cars196",
        write_fixture=write_fixture,
    )
)
