"""Tiny synthetic datasets written in each real dataset's exact distribution format.

The archives have the publishers' file names, folder layout and list formats (`.mat` included),
so the real acquisition and parsing code runs on them. Image content depends on the class through
three continuous factors (hue, stripe angle, stripe frequency), so a network learns an embedding
that also separates the unseen test classes. `fixture.json` records the split statistics the
fixture was built with; the manifest check compares against it.
"""

from __future__ import annotations

import io
import json
import tarfile
import tempfile
import zipfile
from colorsys import hsv_to_rgb
from pathlib import Path

import numpy as np
from PIL import Image

from dmlbench.data.manifest import SplitStats

GOLDEN = 0.6180339887


def class_image(class_index: int, rng: np.random.Generator, size: tuple[int, int]) -> Image.Image:
    """An image of class `class_index`: coloured stripes whose hue, angle and frequency identify it."""
    height, width = size
    hue = (class_index * GOLDEN) % 1.0
    angle = np.pi * ((class_index * 0.382 + 0.1) % 1.0) + rng.normal(0, 0.15)
    frequency = 2.0 + (class_index * 7 % 5) + rng.normal(0, 0.3)
    y, x = np.mgrid[0:height, 0:width] / max(height, width)
    phase = rng.uniform(0, 2 * np.pi)
    wave = 0.5 + 0.5 * np.sin(2 * np.pi * frequency * (x * np.cos(angle) + y * np.sin(angle)) + phase)
    colour = np.array(hsv_to_rgb((hue + rng.normal(0, 0.04)) % 1.0, rng.uniform(0.5, 0.9),
                                 rng.uniform(0.6, 1.0)))
    background = rng.uniform(0.0, 0.4, size=3)
    pixels = wave[..., None] * colour + (1 - wave[..., None]) * background
    pixels = pixels + rng.normal(0, 0.15, size=pixels.shape)
    return Image.fromarray((np.clip(pixels, 0, 1) * 255).astype(np.uint8))


def _jpeg(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def _image_size(rng: np.random.Generator, base: int) -> tuple[int, int]:
    return int(base + rng.integers(0, base // 2)), int(base + rng.integers(0, base // 2))


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    archive.addfile(info, io.BytesIO(data))


def _stats(labels: list[int], splits: list[str]) -> SplitStats:
    images: dict[str, int] = {}
    classes: dict[str, set] = {}
    for label, split in zip(labels, splits):
        images[split] = images.get(split, 0) + 1
        classes.setdefault(split, set()).add(label)
    return SplitStats(images, {k: len(v) for k, v in classes.items()})


def write_cub(folder: Path, n_classes: int, per_class: int, rng, image_size: int) -> SplitStats:
    lines, labels, boxes, split_cls, names = [], [], [], [], []
    with tarfile.open(folder / "CUB_200_2011.tgz", "w:gz") as archive:
        image_id = 0
        for c in range(1, n_classes + 1):
            class_dir = f"{c:03d}.Fixture_Bird_{c}"
            names.append(f"{c} {class_dir}")
            for k in range(per_class):
                image_id += 1
                rel = f"{class_dir}/Fixture_Bird_{c}_{k:04d}_{image_id}.jpg"
                image = class_image(c, rng, _image_size(rng, image_size))
                _add_bytes(archive, f"CUB_200_2011/images/{rel}", _jpeg(image))
                lines.append(f"{image_id} {rel}")
                labels.append(f"{image_id} {c}")
                boxes.append(f"{image_id} 1.0 1.0 {image.width - 2}.0 {image.height - 2}.0")
                split_cls.append(f"{image_id} {int(k % 2 == 0)}")
        for name, rows in (("images.txt", lines), ("image_class_labels.txt", labels),
                           ("bounding_boxes.txt", boxes), ("train_test_split.txt", split_cls),
                           ("classes.txt", names)):
            _add_bytes(archive, f"CUB_200_2011/{name}", ("\n".join(rows) + "\n").encode())
    classes = [c for c in range(1, n_classes + 1) for _ in range(per_class)]
    return _stats(classes, ["train" if c <= n_classes // 2 else "test" for c in classes])


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
            yield c, k, class_image(1000 + c, rng, _image_size(rng, image_size))


def cars_class_names(n_classes: int) -> list[str]:
    """Names as the devkit has them; one with a '/', as in 'Ram C/V Cargo Van Minivan 2012'."""
    return [f"Fixture Car {c}" if c != 2 else "Fixture C/V Van 2" for c in range(1, n_classes + 1)]


def write_cars(folder: Path, n_classes: int, per_class: int, rng, image_size: int,
               layout: str = "original") -> SplitStats:
    """Cars196 in one of its layouts: `original` (car_ims.tgz + cars_annos.mat), `devkit`
    (cars_train.tgz, cars_test.tgz, car_devkit.tgz, cars_test_annos_withlabels.mat) or `folders`
    (the class-folder zip pytorch-metric-learning downloads)."""
    images = list(_cars_images(n_classes, per_class, rng, image_size))
    names = cars_class_names(n_classes)
    {"original": _cars_original, "devkit": _cars_devkit, "folders": _cars_folders}[layout](
        folder, images, names)
    classes = [c for c, _, _ in images]
    return _stats(classes, ["train" if c <= n_classes // 2 else "test" for c in classes])


def _cars_original(folder: Path, images, names) -> None:
    records = []
    with tarfile.open(folder / "car_ims.tgz", "w:gz") as archive:
        for c, k, image in images:
            rel = f"car_ims/{len(records) + 1:06d}.jpg"
            _add_bytes(archive, rel, _jpeg(image))
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
    with tarfile.open(folder / "cars_train.tgz", "w:gz") as train, \
            tarfile.open(folder / "cars_test.tgz", "w:gz") as test:
        for c, k, image in images:
            split = "train" if k % 2 == 0 else "test"
            fname = f"{len(records[split]) + 1:05d}.jpg"
            _add_bytes(train if split == "train" else test, f"cars_{split}/{fname}", _jpeg(image))
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
            archive.writestr(f"car_data/car_data/{split}/{names[c - 1].replace('/', '-')}/{fname}",
                             _jpeg(image))
            rows[split].append(f"{fname},1,1,{image.width - 1},{image.height - 1},{c}")
        archive.writestr("names.csv", "\n".join(names) + "\n")
        for split in ("train", "test"):
            archive.writestr(f"anno_{split}.csv", "\n".join(rows[split]) + "\n")


SOP_SUPER = ["bicycle", "cabinet", "chair", "coffee_maker", "fan", "kettle", "lamp", "mug",
             "sofa", "stapler", "table", "toaster"]


def write_sop(folder: Path, n_classes: int, per_class: int, rng, image_size: int) -> SplitStats:
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
                image = class_image(2000 + c, rng, _image_size(rng, image_size))
                archive.writestr(f"Stanford_Online_Products/{rel}", _jpeg(image))
                line = f"{image_id} {c} {super_id} {rel}"
                rows[split].append(line)
                rows["info"].append(line)
                labels.append(c)
                splits.append(split)
        for split, name in (("train", "Ebay_train.txt"), ("test", "Ebay_test.txt"),
                            ("info", "Ebay_info.txt")):
            archive.writestr(f"Stanford_Online_Products/{name}", "\n".join(rows[split]) + "\n")
    return _stats(labels, splits)


INSHOP_CATEGORIES = ["MEN/Denim", "MEN/Tees_Tanks", "WOMEN/Dresses", "WOMEN/Blouses_Shirts"]


def write_inshop(folder: Path, n_classes: int, per_class: int, rng, image_size: int) -> SplitStats:
    entries = []
    with zipfile.ZipFile(folder / "img.zip", "w") as archive:
        for item in range(1, n_classes + 1):
            category = INSHOP_CATEGORIES[item % len(INSHOP_CATEGORIES)]
            for k in range(per_class):
                rel = f"img/{category}/id_{item:08d}/{k + 1:02d}_{k % 4 + 1}_front.jpg"
                image = class_image(3000 + item, rng, _image_size(rng, image_size))
                archive.writestr(rel, _jpeg(image))
                if item <= n_classes // 2:
                    status = "train"
                else:
                    status = "query" if k % 2 == 0 else "gallery"
                entries.append((rel, item, status))
    lines = [str(len(entries)), "image_name item_id evaluation_status"]
    lines += [f"{rel:<60} id_{item:08d}   {status}" for rel, item, status in entries]
    (folder / "list_eval_partition.txt").write_text("\n".join(lines) + "\n")
    return _stats([e[1] for e in entries], [e[2] for e in entries])


def write_vehicleid(folder: Path, n_classes: int, per_class: int, rng, image_size: int) -> SplitStats:
    """PKU VehicleID's layout in `VehicleID_V1.0.zip`: `image/<7 digits>.jpg`,
    `train_test_split/train_list.txt`, `test_list_{800,1600,2400}.txt` (nested: the small list's
    vehicles are in the medium one, those in the large one), `attribute/model_attr.txt` for half
    the vehicles (three models), the others without a model label."""
    train, test = range(1, n_classes // 2 + 1), range(n_classes // 2 + 1, n_classes + 1)
    nested = {800: list(test)[: max(2, len(test) // 3)], 1600: list(test)[: max(2, 2 * len(test) // 3)],
              2400: list(test)}
    lists, models, images_of = {"train_list.txt": []}, [], {}
    image_id = 0
    with zipfile.ZipFile(folder / "VehicleID_V1.0.zip", "w") as archive:
        for vehicle in range(1, n_classes + 1):
            images_of[vehicle] = []
            for _ in range(per_class):
                image_id += 1
                name = f"{image_id:07d}"
                archive.writestr(f"VehicleID_V1.0/image/{name}.jpg",
                                 _jpeg(class_image(4000 + vehicle, rng, _image_size(rng, image_size))))
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
    return _stats(labels, splits)


WRITERS = {"cub": write_cub, "cars": write_cars, "sop": write_sop, "inshop": write_inshop,
           "vehicleid": write_vehicleid}


def write(dataset: str, folder: Path, n_classes: int = 16, per_class: int = 8, seed: int = 0,
          image_size: int = 48, layout: str | None = None) -> SplitStats:
    """Write the fixture archives of `dataset` into `folder` and return their split statistics.
    `layout` chooses among a dataset's distribution layouts (Cars196: original, devkit, folders)."""
    folder.mkdir(parents=True, exist_ok=True)
    if n_classes < 4 or n_classes % 2 or per_class < 2:
        raise ValueError("fixtures need an even number of classes ≥ 4 and ≥ 2 images per class")
    extra = {"layout": layout} if layout else {}
    stats = WRITERS[dataset](folder, n_classes, per_class, np.random.default_rng(seed), image_size, **extra)
    (folder / "fixture.json").write_text(json.dumps(stats.to_dict(), indent=2) + "\n")
    return stats


def read_stats(folder: Path) -> SplitStats:
    data = json.loads((folder / "fixture.json").read_text())
    return SplitStats(data["images"], data["classes"])
