"""In-Shop Clothes Retrieval (Liu et al. 2016, DeepFashion): 52,712 images of 7,982 items; its own
train / query / gallery partition (`list_eval_partition.txt`), fetched by hand; a fixture writer."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pandas as pd

from dmlbench.data.datasets import register
from dmlbench.data.datasets.spec import DatasetSpec, Layout, SourceFile, find_file, read_lines, whole_numbers
from dmlbench.data.fixture_images import class_image, image_size_of, jpeg, split_stats
from dmlbench.data.manifest import SplitStats
from dmlbench.core.errors import DatasetError

INSHOP_MANUAL = (
    "In-Shop Clothes Retrieval must be downloaded by hand: the publisher serves it from a Google "
    "Drive folder, https://drive.google.com/drive/folders/0B7EVK8r0v71pVDZFQXRsMDZCX1E?resourcekey="
    "0-4R4v6zl4CWhHTsUGOsTstw (the resource key is part of the address; linked from "
    "https://mmlab.ie.cuhk.edu.hk/projects/DeepFashion/InShopRetrieval.html). From it fetch "
    "'Img/img.zip' and 'Eval/list_eval_partition.txt' and put both files in {folder} "
    "(or set data.paths.inshop to a folder holding img/ and list_eval_partition.txt), then rerun."
)


def parse_inshop(root: Path) -> pd.DataFrame:
    """In-Shop `list_eval_partition.txt`: train / query / gallery; the category is MEN/… or WOMEN/…."""
    path = find_file(root, "list_eval_partition.txt")
    lines = read_lines(path)
    try:
        declared = int(lines[0].strip())
    except (IndexError, ValueError):
        raise DatasetError(f"{path}: line 1 should be the image count") from None
    numbered = [(n, line.split()) for n, line in enumerate(lines[2:], 3) if line.strip()]
    rows = [r for _, r in numbered]
    if len(rows) != declared or any(len(r) != 3 for r in rows):
        raise DatasetError(f"{path}: declares {declared} images but has {len(rows)} well-formed lines")
    items = whole_numbers(
        [r[1].removeprefix("id_") for r in rows], path, "the item id (id_<number>)", [n for n, _ in numbered]
    )
    image_root = find_file(root, "img").parent if not (path.parent / "img").exists() else path.parent
    prefix = image_root.relative_to(root)
    return pd.DataFrame(
        {
            "path": [str(prefix / r[0]) for r in rows],
            "label": items,
            "split": [r[2] for r in rows],
            "super": ["/".join(r[0].split("/")[1:3]) for r in rows],
        }
    )


INSHOP_CATEGORIES = ["MEN/Denim", "MEN/Tees_Tanks", "WOMEN/Dresses", "WOMEN/Blouses_Shirts"]


def write_fixture(folder: Path, n_classes: int, per_class: int, rng, image_size: int) -> SplitStats:
    entries = []
    with zipfile.ZipFile(folder / "img.zip", "w") as archive:
        for item in range(1, n_classes + 1):
            category = INSHOP_CATEGORIES[item % len(INSHOP_CATEGORIES)]
            for k in range(per_class):
                rel = f"img/{category}/id_{item:08d}/{k + 1:02d}_{k % 4 + 1}_front.jpg"
                image = class_image(3000 + item, rng, image_size_of(rng, image_size))
                archive.writestr(rel, jpeg(image))
                if item <= n_classes // 2:
                    status = "train"
                else:
                    status = "query" if k % 2 == 0 else "gallery"
                entries.append((rel, item, status))
    lines = [str(len(entries)), "image_name item_id evaluation_status"]
    lines += [f"{rel:<60} id_{item:08d}   {status}" for rel, item, status in entries]
    (folder / "list_eval_partition.txt").write_text("\n".join(lines) + "\n")
    return split_stats([e[1] for e in entries], [e[2] for e in entries])


SPEC = register(
    DatasetSpec(
        "inshop",
        "In-Shop Clothes Retrieval",
        (Layout("publisher (by hand)", (SourceFile("img.zip"), SourceFile("list_eval_partition.txt"))),),
        SplitStats({"train": 25882, "query": 14218, "gallery": 12612}, {"train": 3997, "query": 3985, "gallery": 3985}),
        parse_inshop,
        manual=INSHOP_MANUAL,
        disk_gb=4.0,
        label="In-Shop",
        evaluation="query_gallery",
        supers="categories",
        super_categories=23,
        write_fixture=write_fixture,
    )
)
