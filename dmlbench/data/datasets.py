"""The benchmark datasets: where they come from and how their own lists become a manifest.

Each `DatasetSpec` names the publisher's files (with checksums), the standard zero-shot split
statistics (REPRODUCTION.md) and a parser from the extracted folder to the manifest table.
Parsers return paths relative to the folder they were given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from dmlbench.data.manifest import SplitStats, half_split
from dmlbench.errors import DatasetError


@dataclass(frozen=True)
class SourceFile:
    """One file the publisher distributes; `url` is None where it must be fetched by hand."""

    filename: str
    url: str | None
    md5: str | None


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    title: str
    files: tuple[SourceFile, ...]
    expected: SplitStats
    parse: Callable[[Path], pd.DataFrame]
    manual: str | None = None
    notes: dict = field(default_factory=dict)


def find_file(root: Path, name: str) -> Path:
    """The first file called `name` under `root` (the user may point at a parent folder)."""
    direct = root / name
    if direct.exists():
        return direct
    for candidate in sorted(root.rglob(name)):
        return candidate
    raise DatasetError(f"{name} not found under {root}: is this the extracted dataset folder?")


def _table(path: Path, names: list[str]) -> pd.DataFrame:
    return pd.read_csv(path, sep=r"\s+", header=None, names=names, dtype=str, engine="python")


def parse_cub(root: Path) -> pd.DataFrame:
    """CUB-200-2011 `images.txt` + `image_class_labels.txt`; classes 1-100 train, 101-200 test."""
    images_txt = find_file(root, "images.txt")
    base = images_txt.parent
    images = _table(images_txt, ["id", "file"])
    labels = _table(base / "image_class_labels.txt", ["id", "label"])
    frame = images.merge(labels, on="id", how="left", validate="one_to_one")
    if frame["label"].isna().any():
        raise DatasetError(f"{base / 'image_class_labels.txt'} lacks labels for some images.txt ids")
    prefix = base.relative_to(root) / "images"
    out = pd.DataFrame({"path": [str(prefix / f) for f in frame["file"]],
                        "label": frame["label"].astype(int), "super": ""})
    return half_split(out)


def parse_cars(root: Path) -> pd.DataFrame:
    """Cars196 `cars_annos.mat` (struct array `annotations`); classes 1-98 train, 99-196 test."""
    from scipy.io import loadmat

    mat_path = find_file(root, "cars_annos.mat")
    try:
        annotations = loadmat(mat_path, squeeze_me=True)["annotations"]
    except Exception as error:  # scipy raises several types for a broken file
        raise DatasetError(f"{mat_path} is not a readable cars_annos.mat: {error}") from None
    paths = [str(p) for p in annotations["relative_im_path"]]
    labels = [int(c) for c in annotations["class"]]
    prefix = mat_path.parent.relative_to(root)
    out = pd.DataFrame({"path": [str(prefix / p) for p in paths], "label": labels, "super": ""})
    return half_split(out)


def parse_sop(root: Path) -> pd.DataFrame:
    """Stanford Online Products `Ebay_train.txt` / `Ebay_test.txt`; the super-category is the folder."""
    parts = []
    for split, name in (("train", "Ebay_train.txt"), ("test", "Ebay_test.txt")):
        path = find_file(root, name)
        table = pd.read_csv(path, sep=r"\s+", dtype=str)
        expected = {"image_id", "class_id", "super_class_id", "path"}
        if set(table.columns) != expected:
            raise DatasetError(f"{path}: header {list(table.columns)} is not {sorted(expected)}")
        prefix = path.parent.relative_to(root)
        parts.append(pd.DataFrame({
            "path": [str(prefix / p) for p in table["path"]],
            "label": table["class_id"].astype(int),
            "split": split,
            "super": [p.split("/")[0].removesuffix("_final") for p in table["path"]],
        }))
    return pd.concat(parts, ignore_index=True)


def parse_inshop(root: Path) -> pd.DataFrame:
    """In-Shop `list_eval_partition.txt`: train / query / gallery; the category is MEN/… or WOMEN/…."""
    path = find_file(root, "list_eval_partition.txt")
    lines = path.read_text().splitlines()
    try:
        declared = int(lines[0].strip())
    except (IndexError, ValueError):
        raise DatasetError(f"{path}: line 1 should be the image count") from None
    rows = [line.split() for line in lines[2:] if line.strip()]
    if len(rows) != declared or any(len(r) != 3 for r in rows):
        raise DatasetError(f"{path}: declares {declared} images but has {len(rows)} well-formed lines")
    image_root = find_file(root, "img").parent if not (path.parent / "img").exists() else path.parent
    prefix = image_root.relative_to(root)
    return pd.DataFrame({
        "path": [str(prefix / r[0]) for r in rows],
        "label": [int(r[1].removeprefix("id_")) for r in rows],
        "split": [r[2] for r in rows],
        "super": ["/".join(r[0].split("/")[1:3]) for r in rows],
    })


def parse_digits(root: Path) -> pd.DataFrame:
    """scikit-learn digits written as PNGs by `dmlbench.data.digits`: digits 0-4 train, 5-9 test."""
    table = pd.read_csv(find_file(root, "labels.csv"))
    return half_split(pd.DataFrame({"path": table["path"], "label": table["label"], "super": ""}))


INSHOP_MANUAL = (
    "In-Shop Clothes Retrieval must be downloaded by hand (the publisher serves it through a login "
    "page): from http://mmlab.ie.cuhk.edu.hk/projects/DeepFashion/InShopRetrieval.html fetch "
    "'Img/img.zip' and 'Eval/list_eval_partition.txt' and put both files in {folder} "
    "(or set data.paths.inshop to a folder holding img/ and list_eval_partition.txt), then rerun."
)

DATASETS: dict[str, DatasetSpec] = {
    "cub": DatasetSpec(
        "cub", "CUB-200-2011",
        (SourceFile("CUB_200_2011.tgz",
                    "https://data.caltech.edu/records/65de6-vp158/files/CUB_200_2011.tgz",
                    "97eceeb196236b17998738112f37df78"),),
        SplitStats({"train": 5864, "test": 5924}, {"train": 100, "test": 100}), parse_cub),
    "cars": DatasetSpec(
        "cars", "Cars196",
        (SourceFile("car_ims.tgz", "http://imagenet.stanford.edu/internal/car196/car_ims.tgz",
                    "d5c8f0aa497503f355e17dc7886c3f14"),
         SourceFile("cars_annos.mat", "http://imagenet.stanford.edu/internal/car196/cars_annos.mat",
                    "b407c6086d669747186bd1d764ff9dbc")),
        SplitStats({"train": 8054, "test": 8131}, {"train": 98, "test": 98}), parse_cars),
    "sop": DatasetSpec(
        "sop", "Stanford Online Products",
        (SourceFile("Stanford_Online_Products.zip",
                    "ftp://cs.stanford.edu/cs/cvgl/Stanford_Online_Products.zip",
                    "7f73d41a2f44250d4779881525aea32e"),),
        SplitStats({"train": 59551, "test": 60502}, {"train": 11318, "test": 11316}), parse_sop),
    "inshop": DatasetSpec(
        "inshop", "In-Shop Clothes Retrieval",
        (SourceFile("img.zip", None, None), SourceFile("list_eval_partition.txt", None, None)),
        SplitStats({"train": 25882, "query": 14218, "gallery": 12612},
                   {"train": 3997, "query": 3985, "gallery": 3985}), parse_inshop,
        manual=INSHOP_MANUAL),
    "digits": DatasetSpec(
        "digits", "scikit-learn handwritten digits (shipped with scikit-learn)", (),
        SplitStats({"train": 901, "test": 896}, {"train": 5, "test": 5}), parse_digits),
}


def get(name: str) -> DatasetSpec:
    try:
        return DATASETS[name]
    except KeyError:
        raise DatasetError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}") from None
