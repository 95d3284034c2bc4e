"""Parsers and split checks on the real annotation lists and on the fixtures."""

import re
import shutil
from dataclasses import replace

import pandas as pd
import pytest

from dmlbench.data import cars_fixture, datasets, fixtures, manifest
from dmlbench.data.datasets import cars, cub
from dmlbench.data.prepare import prepare
from dmlbench.core.errors import DatasetError
from dmlbench.run_config import Input

from conftest import REPO


def test_cub_real_lists_give_the_zero_shot_split(shared_datasets, tmp_path):
    root = tmp_path / "cub"
    shutil.copytree(shared_datasets / "CUB_200_2011", root / "CUB_200_2011")
    table = cub.parse_cub(root)
    stats = manifest.SplitStats.of(table)
    # REPRODUCTION.md: classes 1-100 / 5,864 images train, classes 101-200 / 5,924 images test
    assert stats.images == {"train": 5864, "test": 5924}
    assert stats.classes == {"train": 100, "test": 100}
    assert set(table.loc[table.split == "train", "label"]) == set(range(1, 101))
    manifest.check(table, datasets.get("cub").expected, "cub")
    assert table["path"].iloc[0] == "CUB_200_2011/images/001.Black_footed_Albatross/Black_Footed_Albatross_0046_18.jpg"


def test_cars_real_list_through_a_mat_file(shared_datasets, tmp_path):
    rows = [line.split(",") for line in (shared_datasets / "Cars196" / "cars_annos.txt").read_text().split()]
    records = [(path, 10, 10, 100, 100, int(label), int(test)) for path, label, test in rows]
    cars_fixture.write_cars_annos(tmp_path / "cars_annos.mat", records, [f"c{i}" for i in range(196)])
    table = cars.parse_cars(tmp_path)
    stats = manifest.SplitStats.of(table)
    # REPRODUCTION.md: classes 1-98 / 8,054 images train, 99-196 / 8,131 test
    assert stats.images == {"train": 8054, "test": 8131}
    assert stats.classes == {"train": 98, "test": 98}
    manifest.check(table, datasets.get("cars").expected, "cars")
    # the `test` column (classification split) is not the metric-learning split
    assert sum(int(t) for _, _, t in rows) == 8041


def test_split_mismatch_names_the_difference(shared_datasets, tmp_path):
    root = tmp_path / "cub"
    shutil.copytree(shared_datasets / "CUB_200_2011", root / "CUB_200_2011")
    table = cub.parse_cub(root).iloc[:-3]
    with pytest.raises(DatasetError, match="test images: expected 5924, found 5921"):
        manifest.check(table, datasets.get("cub").expected, "cub")


def test_overlapping_classes_are_refused():
    table = pd.DataFrame(
        {"path": ["a", "b", "c", "d"], "label": [1, 1, 2, 2], "split": ["train", "test", "test", "test"], "super": ""}
    )
    expected = manifest.SplitStats.of(table)
    with pytest.raises(DatasetError, match="both train and test"):
        manifest.check(table, expected, "toy")


@pytest.mark.parametrize("name", [n for n in datasets.DATASETS.names() if datasets.get(n).write_fixture])
def test_fixture_goes_through_the_real_parser(name, tmp_path):
    """Every registered dataset with a fixture writer: its fixture through its own parser."""
    out = tmp_path / "fixture" / name / "manifest.csv"
    table = prepare(name, "fixture", tmp_path, out, fixture_size={"n_classes": 6, "per_class": 4})
    assert out.exists()
    stats = manifest.SplitStats.of(manifest.read(out))
    assert stats == fixtures.read_stats(out.parent / "archives")
    assert (out.parent / table["path"].iloc[0]).exists()
    if name in ("sop", "inshop"):
        assert (table["super"] != "").all()
    if name == "inshop":
        assert set(table["split"]) == {"train", "query", "gallery"}
    assert set(table["split"]) - {"train"}, "a test side"


def test_digits_split_by_class(tmp_path):
    table = prepare("digits", "real", tmp_path, tmp_path / "real" / "digits" / "manifest.csv")
    assert set(table.loc[table.split == "train", "label"]) == {0, 1, 2, 3, 4}
    assert set(table.loc[table.split == "test", "label"]) == {5, 6, 7, 8, 9}


def test_user_folder_of_extracted_files_is_used_in_place(tmp_path):
    fixture = tmp_path / "fx" / "cub" / "manifest.csv"
    prepare("cub", "fixture", tmp_path / "fx", fixture, fixture_size={"n_classes": 4, "per_class": 2})
    extracted = fixture.parent / "raw"
    out = tmp_path / "real" / "cub" / "manifest.csv"
    with pytest.raises(DatasetError, match="expected 5864"):
        prepare("cub", "real", tmp_path, out, user_path=str(extracted))
    assert not out.exists()


def test_cache_resizes_and_keeps_labels(tmp_path):
    from PIL import Image

    from dmlbench.data import cache

    source = tmp_path / "fixture" / "cub" / "manifest.csv"
    prepare("cub", "fixture", tmp_path, source, fixture_size={"n_classes": 4, "per_class": 3, "image_size": 64})
    out = source.parent / "cache32" / "manifest.csv"
    cache.build(source, out, 32)
    original, cached = manifest.read(source), manifest.read(out)
    assert list(original["label"]) == list(cached["label"])
    for rel in cached["path"]:
        with Image.open(out.parent / rel) as image:
            assert min(image.size) == 32


def test_truncated_image_is_named_by_the_cache_and_nothing_is_written(tmp_path):
    from dmlbench.data import cache

    source = tmp_path / "fixture" / "cub" / "manifest.csv"
    prepare("cub", "fixture", tmp_path, source, fixture_size={"n_classes": 4, "per_class": 3})
    table = manifest.read(source)
    broken = [source.parent / table["path"][i] for i in (1, 7)]
    for path in broken:
        path.write_bytes(path.read_bytes()[:200])
    out = source.parent / "cache32" / "manifest.csv"
    with pytest.raises(DatasetError) as error:
        cache.build(source, out, 32)
    assert f"2 of {len(table)} images" in str(error.value)
    assert str(broken[0]) in str(error.value) and str(broken[1]) in str(error.value)
    assert not out.exists() and not (out.parent / "images").exists()


def test_unreadable_image_in_training_names_the_file(tmp_path):
    from dmlbench.data import images

    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 truncated")
    data = images.ManifestImages(
        pd.DataFrame({"path": ["bad.jpg"], "label": [0]}), tmp_path, images.TestTransform(Input(resize=8, crop=8))
    )
    with pytest.raises(DatasetError, match=f"image {bad} cannot be read"):
        data[0]


@pytest.mark.parametrize("entry", ["../../outside.jpg", "/etc/passwd"])
def test_dataset_list_entry_leaving_the_root_is_refused(tmp_path, entry):
    fixture = tmp_path / "fx" / "cub" / "manifest.csv"
    prepare("cub", "fixture", tmp_path / "fx", fixture, fixture_size={"n_classes": 4, "per_class": 2})
    extracted = fixture.parent / "raw"
    images_txt = next(extracted.rglob("images.txt"))
    lines = images_txt.read_text().splitlines()
    number, _ = lines[2].split(" ", 1)
    lines[2] = f"{number} {entry}"
    images_txt.write_text("\n".join(lines) + "\n")
    out = tmp_path / "real" / "cub" / "manifest.csv"
    with pytest.raises(DatasetError, match="leave the dataset's folder, first at entry 3: .*" + entry.split("/")[-1]):
        prepare("cub", "real", tmp_path, out, user_path=str(extracted))
    assert not out.exists()


@pytest.mark.parametrize("entry", ["../../secret.jpg", "/etc/hostname"])
def test_manifest_entry_leaving_its_folder_is_refused_naming_the_line(tmp_path, entry):
    path = tmp_path / "manifest.csv"
    path.write_text(f"path,label,split,super\na.jpg,1,train,\n{entry},1,train,\n")
    with pytest.raises(DatasetError, match=rf"first at entry 3: '{re.escape(entry)}'"):
        manifest.read(path)


def test_a_users_extracted_folder_is_reached_through_a_link_with_relative_paths(tmp_path, monkeypatch):
    fixture = tmp_path / "fx" / "cub" / "manifest.csv"
    prepare("cub", "fixture", tmp_path / "fx", fixture, fixture_size={"n_classes": 4, "per_class": 2})
    stats = fixtures.read_stats(fixture.parent / "archives")
    monkeypatch.setitem(datasets.DATASETS._entries, "cub", replace(datasets.get("cub"), expected=stats))
    out = tmp_path / "real" / "cub" / "manifest.csv"
    prepare("cub", "real", tmp_path, out, user_path=str(fixture.parent / "raw"))
    table = manifest.read(out)
    assert all(p.startswith("user-data/") for p in table["path"])
    assert (out.parent / "user-data").resolve() == (fixture.parent / "raw").resolve()
    assert all((out.parent / p).exists() for p in table["path"])


def _content(table, folder):
    import hashlib

    return sorted(
        (hashlib.md5((folder / p).read_bytes()).hexdigest(), label, split)
        for p, label, split in zip(table["path"], table["label"], table["split"])
    )


def test_every_cars_layout_gives_the_same_standard_split(tmp_path):
    contents = {}
    for layout in ("original", "devkit", "folders"):
        out = tmp_path / layout / "fixture" / "cars" / "manifest.csv"
        table = prepare(
            "cars", "fixture", tmp_path / layout, out, fixture_size={"n_classes": 6, "per_class": 4, "layout": layout}
        )
        assert set(table.loc[table["split"] == "train", "label"]) == {1, 2, 3}
        assert set(table.loc[table["split"] == "test", "label"]) == {4, 5, 6}
        contents[layout] = _content(table, out.parent)
    assert contents["original"] == contents["devkit"] == contents["folders"]


def test_cars_devkit_with_a_mismatched_mat_is_refused(tmp_path):
    from dmlbench.data import acquire
    from dmlbench.data.cars_fixture import _devkit_annotations

    files = tmp_path / "files"
    fixtures.write("cars", files, n_classes=4, per_class=4, layout="devkit")
    names = ["cars_train.tgz", "cars_test.tgz", "car_devkit.tgz", "cars_test_annos_withlabels.mat"]
    extracted = acquire.extract([files / n for n in names], tmp_path / "extracted")
    # a .mat from another copy: two more images, and names that do not match
    _devkit_annotations(
        extracted / "cars_test_annos_withlabels.mat", [(1, 1, 9, 9, 1 + n % 4, f"{n + 3:05d}.jpg") for n in range(10)]
    )
    out = tmp_path / "real" / "cars" / "manifest.csv"
    with pytest.raises(
        DatasetError,
        match=r"cars_test_annos_withlabels\.mat does not belong to the images "
        r"in .*cars_test: it lists 10 images, the folder holds 8",
    ):
        prepare("cars", "real", tmp_path, out, user_path=str(extracted))
    assert not out.exists()


@pytest.mark.parametrize("image", ["/etc/hostname", "../../../etc/hostname", "sub/00001.jpg"])
def test_cars_class_folder_lists_name_images_outside_their_folder(tmp_path, image):
    import zipfile

    fixtures.write("cars", tmp_path / "files", n_classes=4, per_class=3, layout="folders")
    root = tmp_path / "root"
    with zipfile.ZipFile(next((tmp_path / "files").glob("*.zip"))) as archive:
        archive.extractall(root)
    annos = next(root.rglob("anno_train.csv"))
    lines = annos.read_text().splitlines()
    lines[1] = ",".join([image] + lines[1].split(",")[1:])
    annos.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=rf"anno_train\.csv: line 2 names the image '{re.escape(image)}'"):
        cars.parse_cars(root)


def _run_prepare(spec: dict, output):
    import json
    import sys

    from conftest import REPO, python_env
    from processes import run

    return run(
        [sys.executable, "-m", "dmlbench", "prepare", "--spec", json.dumps(spec), "--output", str(output)],
        timeout=300,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=python_env(),
    )


def test_an_image_listed_twice_in_train_and_test_is_refused_naming_the_lines(shared_datasets, tmp_path):
    """The real CUB lists with the image of line 1 (train, class 1) listed again as line 8763
    (test, class 150): the published counts hold, the split does not."""
    root = tmp_path / "copy" / "CUB_200_2011"
    shutil.copytree(shared_datasets / "CUB_200_2011", root)
    lines = (root / "images.txt").read_text().splitlines()
    assert (root / "image_class_labels.txt").read_text().splitlines()[8762] == "8763 150"
    lines[8762] = "8763 " + lines[0].split()[1]
    (root / "images.txt").write_text("\n".join(lines) + "\n")
    output = tmp_path / "real" / "cub" / "manifest.csv"
    result = _run_prepare(
        {"dataset": "cub", "source": "real", "root": str(tmp_path), "path": str(root.parent), "download": False}, output
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert (
        f"{root / 'images.txt'}: the file '001.Black_footed_Albatross/Black_Footed_Albatross_0046_18.jpg' "
        f"is listed twice, lines 1 and 8763"
    ) in result.stderr
    assert not output.exists()


def test_a_cars_image_annotated_twice_is_refused_naming_the_annotations(shared_datasets, tmp_path):
    rows = [line.split(",") for line in (shared_datasets / "Cars196" / "cars_annos.txt").read_text().split()]
    records = [(path, 10, 10, 100, 100, int(label), int(test)) for path, label, test in rows]
    later = next(n for n, r in enumerate(records) if r[5] == 150)
    records[later] = (records[0][0],) + records[later][1:]
    cars_fixture.write_cars_annos(tmp_path / "cars_annos.mat", records, [f"c{i}" for i in range(196)])
    with pytest.raises(
        DatasetError,
        match=rf"cars_annos.mat: the image '{records[0][0]}' is listed twice, "
        rf"annotations 1 and {later + 1}",
    ):
        cars.parse_cars(tmp_path)


def test_the_split_check_names_an_image_in_two_rows_but_lets_vehicleids_test_lists_share():
    table = pd.DataFrame(
        {
            "path": ["a", "b", "a", "c"],
            "label": [1, 1, 150, 150],
            "split": ["train", "train", "test", "test"],
            "super": "",
        }
    )
    with pytest.raises(
        DatasetError,
        match=r"2 rows list an image another row lists too, e.g. a in rows "
        r"1 \(train, class 1\) and 3 \(test, class 150\)",
    ):
        manifest.check(table, manifest.SplitStats.of(table), "toy")
    nested = pd.DataFrame(
        {
            "path": ["a", "b", "b", "b"],
            "label": [1, 2, 2, 2],
            "split": ["train", "test_small", "test_medium", "test_large"],
            "super": "",
        }
    )
    manifest.check(nested, manifest.SplitStats.of(nested), "toy")


def test_identical_files_under_two_classes_or_in_both_halves_are_counted_in_a_warning(tmp_path, monkeypatch, capsys):
    fixture = tmp_path / "fx" / "cub" / "manifest.csv"
    made = prepare("cub", "fixture", tmp_path / "fx", fixture, fixture_size={"n_classes": 4, "per_class": 2})
    assert "identical files" not in capsys.readouterr().err
    stats = fixtures.read_stats(fixture.parent / "archives")
    monkeypatch.setitem(datasets.DATASETS._entries, "cub", replace(datasets.get("cub"), expected=stats))
    train, test = made[made["split"] == "train"], made[made["split"] == "test"]
    copies = [
        (train["path"].iloc[0], test["path"].iloc[0]),  # train image as a test image
        (train["path"].iloc[1], train["path"].iloc[-1]),
    ]  # under another training class
    assert train["label"].iloc[1] != train["label"].iloc[-1]
    for source, target in copies:
        shutil.copyfile(fixture.parent / source, fixture.parent / target)
    out = tmp_path / "real" / "cub" / "manifest.csv"
    prepare("cub", "real", tmp_path, out, user_path=str(fixture.parent / "raw"))
    said = capsys.readouterr().err
    assert (
        "warning: CUB-200-2011: 4 images in 2 groups have identical files under two classes or in both "
        "train and test" in said
    )
    assert out.exists()


@pytest.mark.parametrize("name", ["Stanford-Dogs", "stanford-dogs", "2cars", "dogs!"])
def test_a_dataset_name_the_workflow_cannot_use_is_refused_when_it_registers(name):
    with pytest.raises(ValueError, match=re.escape(f"dataset name {name!r}: lowercase letters")):
        datasets.register(replace(datasets.get("cub"), name=name))
    assert name not in datasets.DATASETS


def test_every_registered_dataset_matches_the_workflows_wildcard():
    assert "NAME_PATTERN as DATASET_NAME" in (REPO / "workflow/rules/common.smk").read_text()
    assert all(re.fullmatch(datasets.NAME_PATTERN, name) for name in datasets.DATASETS.names())
    assert re.fullmatch(datasets.NAME_PATTERN, "stanford_dogs")


@pytest.mark.parametrize(
    "change, said",
    [("duplicate", r"lists 1 image\(s\) twice in one split"), ("leak", "are both trained on and evaluated on")],
)
def test_a_manifest_that_breaks_the_protocol_is_refused_even_with_its_checksum(tmp_path, change, said):
    """Rewritten with its sha256 updated (so no damage is seen): an image twice in a split, or a
    test image given a training class, is still refused by every reader."""
    import pandas as pd

    from dmlbench.data import manifest as manifest_io
    from dmlbench.data.prepare import prepare
    from dmlbench.core.errors import DatasetError

    path = tmp_path / "fixture" / "cub" / "manifest.csv"
    prepare("cub", "fixture", tmp_path, path, fixture_size={"n_classes": 8, "per_class": 4, "image_size": 16})
    frame = pd.read_csv(path, dtype={"path": str, "split": str, "super": str}, keep_default_na=False)
    if change == "duplicate":
        frame = pd.concat([frame, frame.iloc[[0]]], ignore_index=True)
    else:
        test_row = frame.index[frame["split"] != "train"][0]
        frame.loc[test_row, "label"] = frame.loc[frame["split"] == "train", "label"].iloc[0]
    manifest_io.write(frame, path)  # a manifest with its sha256 recorded
    with pytest.raises(DatasetError, match=said):
        manifest_io.read(path)
