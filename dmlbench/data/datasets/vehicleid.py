"""PKU VehicleID (Liu et al. 2016): 221,763 images of 26,267 vehicles; a training list and three
nested test lists (800 / 1,600 / 2,400 vehicles), by licence request; a fixture writer."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pandas as pd

from dmlbench.data.datasets import register
from dmlbench.data.datasets.spec import DatasetSpec, Layout, SourceFile, find_file, read_table
from dmlbench.data.fixture_images import class_image, image_size_of, jpeg, split_stats
from dmlbench.data.manifest import SplitStats
from dmlbench.core.errors import DatasetError

VEHICLEID_TESTS = {"small": 800, "medium": 1600, "large": 2400}


VEHICLEID_MANUAL = (
    "PKU VehicleID is given out by licence request only: ask for it on "
    "https://www.pkuml.org/resources/pku-vehicleid.html (a signed agreement, sent by e-mail as the "
    "page says). Then set data.paths.vehicleid to the extracted folder (the one holding image/, "
    "train_test_split/ and attribute/), or put the archive as VehicleID_V1.0.zip in {folder}, "
    "and rerun."
)


def parse_vehicleid(root: Path) -> pd.DataFrame:
    """PKU VehicleID: `train_test_split/train_list.txt` and `test_list_{800,1600,2400}.txt` (lines
    `<image name without .jpg> <vehicle id>`), images `image/<name>.jpg`; the super-category is the
    vehicle model of `attribute/model_attr.txt` (`<vehicle id> <model id>`), `none` where a vehicle
    has no model label. The three test lists become splits test_small/medium/large (an image may
    be in several)."""
    train_list = find_file(root, "train_list.txt")
    base = train_list.parent.parent
    models_file = base / "attribute" / "model_attr.txt"
    models = dict(read_table(models_file, ["vehicle", "model"]).itertuples(index=False)) if models_file.exists() else {}
    parts = []
    for split, name in [("train", "train_list.txt")] + [
        (f"test_{size}", f"test_list_{count}.txt") for size, count in VEHICLEID_TESTS.items()
    ]:
        path = train_list.parent / name
        if not path.exists():
            raise DatasetError(
                f"{path} is missing: VehicleID needs train_list.txt and "
                f"test_list_800/1600/2400.txt in train_test_split/"
            )
        rows = read_table(path, ["image", "vehicle"])
        if rows["vehicle"].isna().any():
            line = int(rows["vehicle"].isna().to_numpy().argmax()) + 1
            raise DatasetError(f"{path}: line {line} is not '<image> <vehicle id>'")
        prefix = (base / "image").relative_to(root)
        parts.append(
            pd.DataFrame(
                {
                    "path": [str(prefix / f"{image}.jpg") for image in rows["image"]],
                    "label": rows["vehicle"].astype(int),
                    "split": split,
                    "super": [str(models.get(v, "none")) for v in rows["vehicle"]],
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def write_fixture(folder: Path, n_classes: int, per_class: int, rng, image_size: int) -> SplitStats:
    """PKU VehicleID's layout in `VehicleID_V1.0.zip`: `image/<7 digits>.jpg`,
    `train_test_split/train_list.txt`, `test_list_{800,1600,2400}.txt` (nested: the small list's
    vehicles are in the medium one, those in the large one), `attribute/model_attr.txt` for half
    the vehicles (three models), the others without a model label."""
    train, test = range(1, n_classes // 2 + 1), range(n_classes // 2 + 1, n_classes + 1)
    nested = {
        800: list(test)[: max(2, len(test) // 3)],
        1600: list(test)[: max(2, 2 * len(test) // 3)],
        2400: list(test),
    }
    lists, models, images_of = {"train_list.txt": []}, [], {}
    image_id = 0
    with zipfile.ZipFile(folder / "VehicleID_V1.0.zip", "w") as archive:
        for vehicle in range(1, n_classes + 1):
            images_of[vehicle] = []
            for _ in range(per_class):
                image_id += 1
                name = f"{image_id:07d}"
                archive.writestr(
                    f"VehicleID_V1.0/image/{name}.jpg",
                    jpeg(class_image(4000 + vehicle, rng, image_size_of(rng, image_size))),
                )
                images_of[vehicle].append(name)
            if vehicle % 2:
                models.append(f"{vehicle} {vehicle % 3}")
        lists["train_list.txt"] = [f"{n} {v}" for v in train for n in images_of[v]]
        for count, vehicles in nested.items():
            lists[f"test_list_{count}.txt"] = [f"{n} {v}" for v in vehicles for n in images_of[v]]
        for name, rows in lists.items():
            archive.writestr(f"VehicleID_V1.0/train_test_split/{name}", "\n".join(rows) + "\n")
        archive.writestr("VehicleID_V1.0/attribute/model_attr.txt", "\n".join(models) + "\n")
    labels, splits = [], []
    for split, count in (("train", None), ("test_small", 800), ("test_medium", 1600), ("test_large", 2400)):
        vehicles = list(train) if count is None else nested[count]
        for v in vehicles:
            labels += [v] * per_class
            splits += [split] * per_class
    return split_stats(labels, splits)


SPEC = register(
    DatasetSpec(
        "vehicleid",
        "PKU VehicleID",
        (Layout("by licence request", (SourceFile("VehicleID_V1.0.zip"),)),),
        SplitStats(
            {"train": 113346, "test_small": 6493, "test_medium": 13377, "test_large": 19777},
            {"train": 13164, "test_small": 800, "test_medium": 1600, "test_large": 2400},
        ),
        parse_vehicleid,
        manual=VEHICLEID_MANUAL,
        disk_gb=12.0,
        label="VehicleID",
        evaluation="test_lists",
        supers="vehicle_models",
        write_fixture=write_fixture,
    )
)
