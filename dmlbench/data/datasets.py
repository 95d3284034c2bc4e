"""The benchmark datasets: where they come from and how their own lists become a manifest.

Each `DatasetSpec` names the layouts a dataset is distributed in (the publisher's files, and for
Cars196 the copies people have today), each a set of files with their sources (mirrors, tried in
order), size and checksums where public; the standard zero-shot split statistics
(REPRODUCTION.md); and a parser from the extracted folder to the manifest table, which recognises
the layout. Parsers return paths relative to the folder they were given.
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
    """One distributed file: its sources (tried in order; none where it must be fetched by hand),
    and the size and checksums where they are public."""

    filename: str
    urls: tuple[str, ...] = ()
    size: int | None = None
    md5: str | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class Layout:
    """One way a dataset is distributed: the files that together make it."""

    name: str
    files: tuple[SourceFile, ...]


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    title: str
    layouts: tuple[Layout, ...]
    expected: SplitStats
    parse: Callable[[Path], pd.DataFrame]
    manual: str | None = None
    disk_gb: float = 0.0  # archives + extracted images + 256-pixel cache, roughly
    notes: dict = field(default_factory=dict)
    pixel_side: int | None = None  # equal-sized small images: raw pixels are a reference row

    @property
    def files(self) -> tuple[SourceFile, ...]:
        """The files of the first (the publisher's own) layout."""
        return self.layouts[0].files if self.layouts else ()


def find_file(root: Path, name: str) -> Path:
    """The first file called `name` under `root` (the user may point at a parent folder)."""
    direct = root / name
    if direct.exists():
        return direct
    for candidate in sorted(root.rglob(name)):
        return candidate
    raise DatasetError(f"{name} not found under {root}: is this the extracted dataset folder?")


def _table(path: Path, names: list[str], unique: str | None = None, integers: tuple[str, ...] = ()) -> pd.DataFrame:
    """A whitespace-separated list with columns `names`; a line that does not fit, a repeated
    `unique` value or a non-integer in `integers` stops with the file and line named."""
    try:
        table = pd.read_csv(path, sep=r"\s+", header=None, names=names, dtype=str, engine="python")
    except FileNotFoundError:
        raise DatasetError(f"{path} is missing: is this the complete extracted dataset?") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as error:
        raise DatasetError(f"{path} cannot be read as '{' '.join(f'<{n}>' for n in names)}' lines "
                           f"({' '.join(str(error).split())[:160]}); use an intact copy") from None
    incomplete = table[names].isna().any(axis=1)
    for column in integers:
        incomplete |= ~table[column].fillna("").str.fullmatch(r"\d+")
    if incomplete.any():
        line = int(incomplete.to_numpy().argmax()) + 1
        raise DatasetError(f"{path}: line {line} is not '{' '.join(f'<{n}>' for n in names)}'; use an "
                           f"intact copy of the file")
    if unique is not None and table[unique].duplicated().any():
        line = int(table[unique].duplicated().to_numpy().argmax()) + 1
        raise DatasetError(f"{path}: line {line} repeats the {unique} {table[unique].iloc[line - 1]!r} of an "
                           f"earlier line; use an intact copy of the file")
    return table


def parse_cub(root: Path) -> pd.DataFrame:
    """CUB-200-2011 `images.txt` + `image_class_labels.txt`; classes 1-100 train, 101-200 test."""
    images_txt = find_file(root, "images.txt")
    base = images_txt.parent
    images = _table(images_txt, ["id", "file"], unique="id")
    labels = _table(base / "image_class_labels.txt", ["id", "label"], unique="id", integers=("label",))
    frame = images.merge(labels, on="id", how="left", validate="one_to_one")
    if frame["label"].isna().any():
        raise DatasetError(f"{base / 'image_class_labels.txt'} lacks labels for some images.txt ids")
    prefix = base.relative_to(root) / "images"
    out = pd.DataFrame({"path": [str(prefix / f) for f in frame["file"]],
                        "label": frame["label"].astype(int), "super": ""})
    return half_split(out)


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
    raise DatasetError(f"{root}: no Cars196 annotation file found (cars_annos.mat, "
                       f"devkit/cars_train_annos.mat or anno_train.csv): is this the extracted dataset?")


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
    missing = [f for f in fields if f not in (annotations.dtype.names or ())]
    if missing:
        raise DatasetError(f"{mat_path}: the annotations lack fields {missing}; is this the right file?")
    return annotations


def _parse_cars_original(root: Path) -> pd.DataFrame:
    mat_path = find_file(root, "cars_annos.mat")
    annotations = _load_annotations(mat_path, ("relative_im_path", "class"))
    paths = [str(p) for p in annotations["relative_im_path"]]
    labels = [int(c) for c in annotations["class"]]
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
            f"cars_test/).")


def _parse_cars_devkit(root: Path) -> pd.DataFrame:
    parts = []
    for mat_name, folder_name in (("cars_train_annos.mat", "cars_train"),
                                  ("cars_test_annos_withlabels.mat", "cars_test")):
        mat_path = find_file(root, mat_name)
        folder = find_file(root, folder_name)
        annotations = _load_annotations(mat_path, ("fname", "class"))
        names = [str(n) for n in annotations["fname"]]
        _check_listed_equals_present(mat_path, folder, names)
        prefix = folder.relative_to(root)
        parts.append(pd.DataFrame({"path": [str(prefix / n) for n in names],
                                   "label": [int(c) for c in annotations["class"]], "super": ""}))
    return half_split(pd.concat(parts, ignore_index=True))


def _plain_file_name(name: str) -> bool:
    """A file name without any folder part (so it cannot point outside its folder)."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


def _parse_cars_folders(root: Path) -> pd.DataFrame:
    names_csv = find_file(root, "names.csv")
    names = [line.strip() for line in names_csv.read_text().splitlines() if line.strip()]
    base = names_csv.parent
    parts = []
    for split in ("train", "test"):
        annos = base / f"anno_{split}.csv"
        if not annos.exists():
            raise DatasetError(f"{annos} is missing: the class-folder copy needs names.csv, "
                               f"anno_train.csv and anno_test.csv side by side")
        numbered = [(n, line.split(",")) for n, line in enumerate(annos.read_text().splitlines(), 1)
                    if line.strip()]
        bad = [n for n, r in numbered if len(r) < 2 or not r[-1].strip().isdigit()
               or not 1 <= int(r[-1]) <= len(names)]
        if bad:
            raise DatasetError(f"{annos}: line {bad[0]} is not '<image>,x1,y1,x2,y2,<class 1-"
                               f"{len(names)}>'")
        outside = [(n, r[0]) for n, r in numbered if not _plain_file_name(r[0])]
        if outside:
            raise DatasetError(f"{annos}: line {outside[0][0]} names the image {outside[0][1]!r}; "
                               f"images are plain file names inside their class folder (no path). "
                               f"Fix the line, or use an intact copy of the list.")
        rows = [r for _, r in numbered]
        folder = base / "car_data" / "car_data" / split
        parts.append(pd.DataFrame({
            "path": [str((folder / names[int(r[-1]) - 1].replace("/", "-") / r[0]).relative_to(root))
                     for r in rows],
            "label": [int(r[-1]) for r in rows], "super": ""}))
    return half_split(pd.concat(parts, ignore_index=True))


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


VEHICLEID_TESTS = {"small": 800, "medium": 1600, "large": 2400}


def parse_vehicleid(root: Path) -> pd.DataFrame:
    """PKU VehicleID: `train_test_split/train_list.txt` and `test_list_{800,1600,2400}.txt` (lines
    `<image name without .jpg> <vehicle id>`), images `image/<name>.jpg`; the super-category is the
    vehicle model of `attribute/model_attr.txt` (`<vehicle id> <model id>`), `none` where a vehicle
    has no model label. The three test lists become splits test_small/medium/large (an image may
    be in several)."""
    train_list = find_file(root, "train_list.txt")
    base = train_list.parent.parent
    models_file = base / "attribute" / "model_attr.txt"
    models = dict(_table(models_file, ["vehicle", "model"]).itertuples(index=False)) \
        if models_file.exists() else {}
    parts = []
    for split, name in [("train", "train_list.txt")] + [
            (f"test_{size}", f"test_list_{count}.txt") for size, count in VEHICLEID_TESTS.items()]:
        path = train_list.parent / name
        if not path.exists():
            raise DatasetError(f"{path} is missing: VehicleID needs train_list.txt and "
                               f"test_list_800/1600/2400.txt in train_test_split/")
        rows = _table(path, ["image", "vehicle"])
        if rows["vehicle"].isna().any():
            line = int(rows["vehicle"].isna().to_numpy().argmax()) + 1
            raise DatasetError(f"{path}: line {line} is not '<image> <vehicle id>'")
        prefix = (base / "image").relative_to(root)
        parts.append(pd.DataFrame({
            "path": [str(prefix / f"{image}.jpg") for image in rows["image"]],
            "label": rows["vehicle"].astype(int), "split": split,
            "super": [str(models.get(v, "none")) for v in rows["vehicle"]]}))
    return pd.concat(parts, ignore_index=True)


def parse_digits(root: Path) -> pd.DataFrame:
    """scikit-learn digits written as PNGs by `dmlbench.data.digits`: digits 0-4 train, 5-9 test."""
    table = pd.read_csv(find_file(root, "labels.csv"))
    return half_split(pd.DataFrame({"path": table["path"], "label": table["label"], "super": ""}))


INSHOP_MANUAL = (
    "In-Shop Clothes Retrieval must be downloaded by hand: the publisher serves it from a Google "
    "Drive folder, https://drive.google.com/drive/folders/0B7EVK8r0v71pVDZFQXRsMDZCX1E?resourcekey="
    "0-4R4v6zl4CWhHTsUGOsTstw (the resource key is part of the address; linked from "
    "https://mmlab.ie.cuhk.edu.hk/projects/DeepFashion/InShopRetrieval.html). From it fetch "
    "'Img/img.zip' and 'Eval/list_eval_partition.txt' and put both files in {folder} "
    "(or set data.paths.inshop to a folder holding img/ and list_eval_partition.txt), then rerun."
)

VEHICLEID_MANUAL = (
    "PKU VehicleID is given out by licence request only: ask for it on "
    "https://www.pkuml.org/resources/pku-vehicleid.html (a signed agreement, sent by e-mail as the "
    "page says). Then set data.paths.vehicleid to the extracted folder (the one holding image/, "
    "train_test_split/ and attribute/), or put the archive as VehicleID_V1.0.zip in {folder}, "
    "and rerun."
)

CARS_MANUAL = (
    "Cars196's original addresses no longer serve it. Put the files of one of its layouts in "
    "{folder} (or set data.paths.cars to the folder holding them, or the extracted copy): "
    "car_ims.tgz + cars_annos.mat; or cars_train.tgz + cars_test.tgz + car_devkit.tgz + "
    "cars_test_annos_withlabels.mat (the copies on Kaggle and Hugging Face have this layout); or "
    "the class-folder copy (names.csv, anno_train.csv, anno_test.csv, car_data/car_data/). Then rerun."
)

CARS_DEVKIT = "https://ai.stanford.edu/~jkrause/car196/"  # 404 since 2023; the layout lives on in copies

DATASETS: dict[str, DatasetSpec] = {
    "cub": DatasetSpec(
        "cub", "CUB-200-2011",
        (Layout("publisher", (SourceFile(
            "CUB_200_2011.tgz",
            ("https://data.caltech.edu/records/65de6-vp158/files/CUB_200_2011.tgz?download=1",
             "https://data.caltech.edu/records/65de6-vp158/files/CUB_200_2011.tgz"),
            size=1_150_585_339, md5="97eceeb196236b17998738112f37df78"),)),),
        SplitStats({"train": 5864, "test": 5924}, {"train": 100, "test": 100}), parse_cub,
        disk_gb=2.6),
    "cars": DatasetSpec(
        "cars", "Cars196",
        (Layout("original (car_ims.tgz + cars_annos.mat)", (
            SourceFile("car_ims.tgz", (f"{CARS_DEVKIT}car_ims.tgz",
                                       "http://imagenet.stanford.edu/internal/car196/car_ims.tgz"),
                       md5="d5c8f0aa497503f355e17dc7886c3f14"),
            SourceFile("cars_annos.mat", (f"{CARS_DEVKIT}cars_annos.mat",
                                          "http://imagenet.stanford.edu/internal/car196/cars_annos.mat"),
                       md5="b407c6086d669747186bd1d764ff9dbc"))),
         Layout("devkit (cars_train/test.tgz + car_devkit.tgz)", (
             SourceFile("cars_train.tgz", (f"{CARS_DEVKIT}cars_train.tgz",), size=979_269_282,
                        sha256="512b227b30e2f0a8aab9e09485786ab4479582073a144998da74d64b801fd288"),
             SourceFile("cars_test.tgz", (f"{CARS_DEVKIT}cars_test.tgz",), size=977_350_468,
                        sha256="bffea656d6f425cba3c91c6d83336e4c5f86c6cffd8975b0f375d3a10da8e243"),
             SourceFile("car_devkit.tgz", ("https://ai.stanford.edu/~jkrause/cars/car_devkit.tgz",),
                        size=330_960,
                        sha256="b97deb463af7d58b6bfaa18b2a4de9829f0f79e8ce663dfa9261bf7810e9accd"),
             SourceFile("cars_test_annos_withlabels.mat", (f"{CARS_DEVKIT}cars_test_annos_withlabels.mat",),
                        size=185_758,
                        sha256="790f75be8ea34eeded134cc559332baf23e30e91367e9ddca97d26ed9b895f05"))),
         Layout("class folders (pytorch-metric-learning's copy)", (
             SourceFile("stanford-car-dataset-by-classes-folder.zip",
                        ("https://www.kaggle.com/api/v1/datasets/download/jutrera/"
                         "stanford-car-dataset-by-classes-folder",)),))),
        SplitStats({"train": 8054, "test": 8131}, {"train": 98, "test": 98}), parse_cars,
        manual=CARS_MANUAL, disk_gb=4.5),
    "sop": DatasetSpec(
        "sop", "Stanford Online Products",
        (Layout("publisher", (SourceFile(
            "Stanford_Online_Products.zip",
            ("https://drive.usercontent.google.com/download?id=1TclrpQOF_ullUP99wk_gjGN8pKvtErG8"
             "&export=download&confirm=t",
             "ftp://cs.stanford.edu/cs/cvgl/Stanford_Online_Products.zip"),
            size=3_083_860_082, md5="7f73d41a2f44250d4779881525aea32e",
            sha256="b04fa78210e69fab050ce73939550e1cd0f96890bdd98ec9fee732c3b756ef48"),)),),
        SplitStats({"train": 59551, "test": 60502}, {"train": 11318, "test": 11316}), parse_sop,
        disk_gb=10.0),
    "inshop": DatasetSpec(
        "inshop", "In-Shop Clothes Retrieval",
        (Layout("publisher (by hand)", (SourceFile("img.zip"), SourceFile("list_eval_partition.txt"))),),
        SplitStats({"train": 25882, "query": 14218, "gallery": 12612},
                   {"train": 3997, "query": 3985, "gallery": 3985}), parse_inshop,
        manual=INSHOP_MANUAL, disk_gb=4.0),
    "vehicleid": DatasetSpec(
        "vehicleid", "PKU VehicleID",
        (Layout("by licence request", (SourceFile("VehicleID_V1.0.zip"),)),),
        SplitStats({"train": 113346, "test_small": 6493, "test_medium": 13377, "test_large": 19777},
                   {"train": 13164, "test_small": 800, "test_medium": 1600, "test_large": 2400}),
        parse_vehicleid, manual=VEHICLEID_MANUAL, disk_gb=12.0),
    "digits": DatasetSpec(
        "digits", "scikit-learn handwritten digits (shipped with scikit-learn)", (),
        SplitStats({"train": 901, "test": 896}, {"train": 5, "test": 5}), parse_digits,
        pixel_side=8),
}


def get(name: str) -> DatasetSpec:
    try:
        return DATASETS[name]
    except KeyError:
        raise DatasetError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}") from None
