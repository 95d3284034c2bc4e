"""Stanford Online Products (Oh Song et al. 2016): 120,053 images of 22,634 products in 12
super-categories; `Ebay_train.txt` / `Ebay_test.txt`, and a fixture writer of the same zip."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pandas as pd

from dmlbench.data.datasets import register
from dmlbench.data.datasets.spec import DatasetSpec, Layout, SourceFile, find_file, whole_numbers
from dmlbench.data.fixture_images import class_image, image_size_of, jpeg, split_stats
from dmlbench.data.manifest import SplitStats
from dmlbench.core.errors import DatasetError


def parse_sop(root: Path) -> pd.DataFrame:
    """Stanford Online Products `Ebay_train.txt` / `Ebay_test.txt`; the super-category is the folder."""
    parts = []
    for split, name in (("train", "Ebay_train.txt"), ("test", "Ebay_test.txt")):
        path = find_file(root, name)
        try:
            table = pd.read_csv(path, sep=r"\s+", dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as error:
            raise DatasetError(
                f"{path} cannot be read as 'image_id class_id super_class_id path' lines "
                f"({' '.join(str(error).split())[:160]}); use an intact copy"
            ) from None
        expected = {"image_id", "class_id", "super_class_id", "path"}
        if set(table.columns) != expected:
            raise DatasetError(f"{path}: header {list(table.columns)} is not {sorted(expected)}")
        incomplete = table.isna().any(axis=1) | (table == "").any(axis=1)
        if incomplete.any():
            raise DatasetError(
                f"{path}: line {int(incomplete.to_numpy().argmax()) + 2} is not 'image_id class_id "
                f"super_class_id path'; use an intact copy of the file"
            )
        labels = whole_numbers(list(table["class_id"]), path, "the class_id", range(2, len(table) + 2))
        prefix = path.parent.relative_to(root)
        parts.append(
            pd.DataFrame(
                {
                    "path": [str(prefix / p) for p in table["path"]],
                    "label": labels,
                    "split": split,
                    "super": [p.split("/")[0].removesuffix("_final") for p in table["path"]],
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


SOP_SUPER = [
    "bicycle",
    "cabinet",
    "chair",
    "coffee_maker",
    "fan",
    "kettle",
    "lamp",
    "mug",
    "sofa",
    "stapler",
    "table",
    "toaster",
]


def write_fixture(folder: Path, n_classes: int, per_class: int, rng, image_size: int) -> SplitStats:
    header = "image_id class_id super_class_id path"
    rows = {"train": [header], "test": [header], "info": [header]}
    labels, splits = [], []
    image_id = 0
    with zipfile.ZipFile(folder / "Stanford_Online_Products.zip", "w") as archive:
        for c in range(1, n_classes + 1):
            split = "train" if c <= n_classes // 2 else "test"
            super_id = (c - 1) % len(SOP_SUPER) + 1
            for k in range(per_class):
                image_id += 1
                rel = f"{SOP_SUPER[super_id - 1]}_final/{100000000000 + c}_{k}.JPG"
                image = class_image(2000 + c, rng, image_size_of(rng, image_size))
                archive.writestr(f"Stanford_Online_Products/{rel}", jpeg(image))
                line = f"{image_id} {c} {super_id} {rel}"
                rows[split].append(line)
                rows["info"].append(line)
                labels.append(c)
                splits.append(split)
        for split, name in (("train", "Ebay_train.txt"), ("test", "Ebay_test.txt"), ("info", "Ebay_info.txt")):
            archive.writestr(f"Stanford_Online_Products/{name}", "\n".join(rows[split]) + "\n")
    return split_stats(labels, splits)


SPEC = register(
    DatasetSpec(
        "sop",
        "Stanford Online Products",
        (
            Layout(
                "publisher",
                (
                    SourceFile(
                        "Stanford_Online_Products.zip",
                        (
                            "https://drive.usercontent.google.com/download?id=1TclrpQOF_ullUP99wk_gjGN8pKvtErG8"
                            "&export=download&confirm=t",
                            "ftp://cs.stanford.edu/cs/cvgl/Stanford_Online_Products.zip",
                        ),
                        size=3_083_860_082,
                        md5="7f73d41a2f44250d4779881525aea32e",
                        sha256="b04fa78210e69fab050ce73939550e1cd0f96890bdd98ec9fee732c3b756ef48",
                    ),
                ),
            ),
        ),
        SplitStats({"train": 59551, "test": 60502}, {"train": 11318, "test": 11316}),
        parse_sop,
        disk_gb=10.0,
        label="SOP",
        supers="categories",
        super_categories=12,
        write_fixture=write_fixture,
    )
)
