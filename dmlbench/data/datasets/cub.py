"""CUB-200-2011 (Wah et al. 2011): 11,788 bird images of 200 species; classes 1-100 train, 101-200
test (the zero-shot split). Its archive, `images.txt` + `image_class_labels.txt`, and a fixture
writer of the same files."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pandas as pd

from dmlbench.data.datasets import register
from dmlbench.data.datasets.spec import DatasetSpec, Layout, SourceFile, find_file, read_table
from dmlbench.data.fixture_images import add_bytes, class_image, image_size_of, jpeg, split_stats
from dmlbench.data.manifest import SplitStats, half_split
from dmlbench.core.errors import DatasetError


def parse_cub(root: Path) -> pd.DataFrame:
    """CUB-200-2011 `images.txt` + `image_class_labels.txt`; classes 1-100 train, 101-200 test."""
    images_txt = find_file(root, "images.txt")
    base = images_txt.parent
    images = read_table(images_txt, ["id", "file"], unique=("id", "file"))
    labels = read_table(base / "image_class_labels.txt", ["id", "label"], unique=("id",), integers=("label",))
    frame = images.merge(labels, on="id", how="left", validate="one_to_one")
    if frame["label"].isna().any():
        raise DatasetError(f"{base / 'image_class_labels.txt'} lacks labels for some images.txt ids")
    prefix = base.relative_to(root) / "images"
    out = pd.DataFrame(
        {"path": [str(prefix / f) for f in frame["file"]], "label": frame["label"].astype(int), "super": ""}
    )
    return half_split(out)


def write_fixture(folder: Path, n_classes: int, per_class: int, rng, image_size: int) -> SplitStats:
    lines, labels, boxes, split_cls, names = [], [], [], [], []
    with tarfile.open(folder / "CUB_200_2011.tgz", "w:gz") as archive:
        image_id = 0
        for c in range(1, n_classes + 1):
            class_dir = f"{c:03d}.Fixture_Bird_{c}"
            names.append(f"{c} {class_dir}")
            for k in range(per_class):
                image_id += 1
                rel = f"{class_dir}/Fixture_Bird_{c}_{k:04d}_{image_id}.jpg"
                image = class_image(c, rng, image_size_of(rng, image_size))
                add_bytes(archive, f"CUB_200_2011/images/{rel}", jpeg(image))
                lines.append(f"{image_id} {rel}")
                labels.append(f"{image_id} {c}")
                boxes.append(f"{image_id} 1.0 1.0 {image.width - 2}.0 {image.height - 2}.0")
                split_cls.append(f"{image_id} {int(k % 2 == 0)}")
        for name, rows in (
            ("images.txt", lines),
            ("image_class_labels.txt", labels),
            ("bounding_boxes.txt", boxes),
            ("train_test_split.txt", split_cls),
            ("classes.txt", names),
        ):
            add_bytes(archive, f"CUB_200_2011/{name}", ("\n".join(rows) + "\n").encode())
    classes = [c for c in range(1, n_classes + 1) for _ in range(per_class)]
    return split_stats(classes, ["train" if c <= n_classes // 2 else "test" for c in classes])


SPEC = register(
    DatasetSpec(
        "cub",
        "CUB-200-2011",
        (
            Layout(
                "publisher",
                (
                    SourceFile(
                        "CUB_200_2011.tgz",
                        (
                            "https://data.caltech.edu/records/65de6-vp158/files/CUB_200_2011.tgz?download=1",
                            "https://data.caltech.edu/records/65de6-vp158/files/CUB_200_2011.tgz",
                        ),
                        size=1_150_585_339,
                        md5="97eceeb196236b17998738112f37df78",
                    ),
                ),
            ),
        ),
        SplitStats({"train": 5864, "test": 5924}, {"train": 100, "test": 100}),
        parse_cub,
        disk_gb=2.6,
        label="CUB-200-2011",
        write_fixture=write_fixture,
    )
)
