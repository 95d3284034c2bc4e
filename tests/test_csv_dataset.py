"""A dataset from one CSV (docs/howto/add-dataset.md, `dmlbench.data.csv_dataset`): the columns,
the evaluation layouts, every refusal (each one a good CSV changed in one place), the plan that
registers and joins it, and the prepare step that links its images in place."""

import os
import shutil

import numpy as np
import pandas as pd
import pytest

from dmlbench.config import csv_datasets, jobs
from dmlbench.config.plan import Plan
from dmlbench.core.errors import ConfigError, DatasetError
from dmlbench.data import csv_dataset, datasets, manifest, prepare
from dmlbench.data.fixture_images import class_image

from conftest import CONFIG_DIR

GOOD = """path,label,split,is_query,is_gallery
a/1.jpg,1,train,,
a/2.jpg,1,train,,
b/1.jpg,2,train,,
b/2.jpg,2,train,,
c/1.jpg,3,validation,1,0
c/2.jpg,3,validation,0,1
d/1.jpg,4,validation,1,0
d/2.jpg,4,validation,0,1
"""


@pytest.fixture(autouse=True)
def no_csv_dataset_left():
    yield
    datasets.keep_csv(())  # the registry as the built-in modules make it


def images(folder, paths) -> None:
    rng = np.random.default_rng(0)
    for n, path in enumerate(paths):
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        class_image(n, rng, (12, 12)).save(folder / path)


@pytest.fixture
def folder(tmp_path):
    """A folder of the images GOOD lists (its CSV written by each test)."""
    images(tmp_path / "birds", [line.split(",")[0] for line in GOOD.splitlines()[1:]])
    return tmp_path / "birds"


def written(folder, text: str):
    path = folder / "birds.csv"
    path.write_text(text)
    return path


def test_the_good_csv_is_a_query_gallery_dataset_whose_paths_are_read_from_its_folder(folder, monkeypatch):
    monkeypatch.chdir(folder.parent.parent)  # not the CSV's folder: its paths are relative to that one
    found = csv_dataset.read(written(folder, GOOD))
    assert found.evaluation == "query_gallery"
    assert found.table["split"].tolist() == ["train"] * 4 + ["query", "gallery"] * 2
    assert found.table["path"].iloc[0] == str(folder / "a" / "1.jpg")
    spec = csv_dataset.spec("birds", folder / "birds.csv")
    assert spec.expected.images == {"train": 4, "query": 2, "gallery": 2} and spec.expected.classes["train"] == 2
    assert spec.evaluation == "query_gallery" and spec.csv_sha256 == found.sha256 and spec.supers is None


@pytest.mark.parametrize(
    "flags", [None, ("1", "1"), ("true", "TRUE")], ids=["no flags", "every row both", "true, any case"]
)
def test_without_flags_or_with_both_on_every_row_every_test_image_queries_the_rest(folder, flags):
    if flags is None:
        text = "\n".join(line.rsplit(",", 2)[0] for line in GOOD.splitlines()) + "\n"
    else:
        text = GOOD.replace(",1,0\n", f",{flags[0]},{flags[1]}\n").replace(",0,1\n", f",{flags[0]},{flags[1]}\n")
    found = csv_dataset.read(written(folder, text))
    assert found.evaluation == "all_vs_all"
    assert found.table["split"].tolist() == ["train"] * 4 + ["test"] * 4


def test_absolute_paths_a_category_and_the_manifest_rows_under_the_images_common_folder(folder, tmp_path):
    elsewhere = tmp_path / "lists"
    elsewhere.mkdir()
    text = GOOD.replace("path,label,split,is_query,is_gallery", "path,label,split,is_query,is_gallery,category")
    text = "\n".join(
        f"{folder / line.split(',')[0]},{line.split(',', 1)[1]},{'birds' if n % 2 else 'waders'}" if n else line
        for n, line in enumerate(text.splitlines())
    )
    spec = csv_dataset.spec("birds", written(elsewhere, text + "\n"))
    assert spec.supers == "categories" and spec.super_categories == 2
    rows = spec.parse(spec.csv)
    assert rows.attrs["top"] == str(folder) and rows["path"].iloc[0] == "a/1.jpg"
    assert set(rows["super"]) == {"birds", "waders"}


def test_a_blank_line_is_skipped_and_the_lines_named_keep_their_numbers(folder):
    text = GOOD.replace("a/2.jpg,1,train,,\n", "a/2.jpg,1,train,,\n\n").replace("b/1.jpg,2", "b/1.jpg,two")
    with pytest.raises(DatasetError, match="line 5, column label: 'two' is not a whole number"):
        csv_dataset.read(written(folder, text))


REFUSED = {  # the good CSV changed in one place → what the refusal says
    "a label not a number": ("b/1.jpg,2,train", "b/1.jpg,two,train", "line 4, column label: 'two' is not a whole"),
    "a split of another name": (
        "d/2.jpg,4,validation",
        "d/2.jpg,4,test",
        "line 9, column split: 'test' is not 'train' or 'validation'",
    ),
    "an empty path": ("a/2.jpg,1", ",1", "line 3, column path: '' is empty"),
    "a flag on a train row": ("a/1.jpg,1,train,,", "a/1.jpg,1,train,0,", "line 2, column is_query: '0' on a train row"),
    "a flag neither 0/1 nor true/false": (
        "c/1.jpg,3,validation,1,0",
        "c/1.jpg,3,validation,yes,0",
        "line 6, column is_query: 'yes' on a validation row: give 0/1 or true/false",
    ),
    "a validation row neither query nor gallery": (
        "c/2.jpg,3,validation,0,1",
        "c/2.jpg,3,validation,0,0",
        "line 7: is_query and is_gallery both 0",
    ),
    "a row both among rows that are not": (
        "c/1.jpg,3,validation,1,0",
        "c/1.jpg,3,validation,1,1",
        "line 6 is both a query and a gallery image while line 7 is not",
    ),
    "a query class without a gallery image": (
        "d/2.jpg,4,validation,0,1",
        "d/2.jpg,4,validation,1,0",
        "class 4 has queries (line 8) but no gallery image",
    ),
    "an image listed twice": ("d/2.jpg,4", "d/1.jpg,4", "lines 8 and 9 list the same image"),
    "a class in train and validation": (
        "b/2.jpg,2,train",
        "b/2.jpg,3,train",
        "class 3 is in train (line 5) and in validation (line 6)",
    ),
    "one class in a half": (",4,validation", ",3,validation", "1 class(es) in validation: each half needs at least 2"),
    "a class of one image": ("b/2.jpg,2,train", "b/2.jpg,5,train", "line 4, column label: class 2 has one train image"),
    "an image file that is not there": ("a/2.jpg", "a/3.jpg", "line 3, column path: 1 image file(s) not found"),
    "a misspelt column": ("is_gallery\n", "is_galery\n", "unknown column 'is_galery' (did you mean 'is_gallery'?)"),
    "a required column missing": ("path,label,", "path,lable,", "no column 'label' in its header"),
    "one flag without the other": (
        "split,is_query,is_gallery",
        "split,is_query,category",
        "column 'is_query' without 'is_gallery'",
    ),
    "bounding boxes": ("is_gallery\n", "x_1\n", "column 'x_1': bounding boxes are not read"),
    "a line of too many fields": ("d/2.jpg,4,validation,0,1\n", "d/2.jpg,4,validation,0,1,2,3\n", "cannot be read"),
    "a header without rows": (GOOD, GOOD.splitlines()[0] + "\n", "has a header but no rows"),
    "an empty file": (GOOD, "", "is empty; its first line names the columns"),
}


def test_the_good_csv_passes_every_check_the_refusals_make(folder):
    assert csv_dataset.read(written(folder, GOOD)).evaluation == "query_gallery"


@pytest.mark.parametrize("case", list(REFUSED))
def test_each_mistake_in_the_csv_is_named_with_its_file_line_column_and_value(folder, case):
    old, new, said = REFUSED[case]
    assert old in GOOD
    path = written(folder, GOOD.replace(old, new))
    with pytest.raises(DatasetError) as refused:
        csv_dataset.read(path)
    assert str(refused.value).startswith(f"{path}") and said in str(refused.value)
    assert "\n" not in str(refused.value)  # one line


def test_a_missing_file_a_folder_and_a_file_that_is_not_text_are_named(tmp_path):
    with pytest.raises(DatasetError, match="no such file; give the path of your dataset's CSV"):
        csv_dataset.read(tmp_path / "absent.csv")
    with pytest.raises(DatasetError, match="is a folder; give the CSV file in it"):
        csv_dataset.read(tmp_path)
    (tmp_path / "binary.csv").write_bytes(b"path,label,split\n\xff\xfe,1,train\n")
    with pytest.raises(DatasetError, match="is not UTF-8 text"):
        csv_dataset.read(tmp_path / "binary.csv")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its permissions")
def test_a_file_this_user_cannot_read_is_named(folder):
    path = written(folder, GOOD)
    path.chmod(0)
    with pytest.raises(DatasetError, match="cannot be read by this user"):
        csv_dataset.read(path)


def smoke(folder, **more):
    config = {"preset": "smoke", "data": {"csv": {"birds": str(folder / "birds.csv")}}, **more}
    return Plan.load(CONFIG_DIR, config)


def test_the_plan_registers_the_csv_dataset_and_joins_it_to_the_suites_experiments(folder):
    written(folder, GOOD)
    plan = smoke(folder, datasets=["birds"], per_dataset={"birds": {"batch": {"size": 2, "per_class": 2}}})
    for key in csv_datasets.JOINS:
        assert "birds" in plan.datasets_of(key), key  # smoke's subset narrows each to cub: birds joins it
    assert plan.experiments["suite.knobs"]["stand_in"]["birds"] == "cub"
    sha = datasets.get("birds").csv_sha256
    run = plan.fair_runs()[0]
    assert run.dataset == "birds" and plan.resolved(run)["data"]["csv_sha256"] == sha
    spec = jobs.of(plan).prepare_spec("birds")
    assert spec["csv_sha256"] == sha and spec["path"] is None  # the content, not the path, reruns prepare
    assert str(folder / "birds.csv") in csv_datasets.environment(plan)
    assert (
        "csv_sha256" not in jobs.of(plan).prepare_spec("cub") and csv_datasets.environment(Plan.load(CONFIG_DIR)) == ""
    )
    assert "birds" not in datasets.DATASETS  # the other plan's registry: its own datasets only


@pytest.mark.parametrize(
    "name, more, said",
    [
        ("Birds", {}, "data.csv.Birds: a dataset's name is lowercase letters"),
        ("cub", {}, "data.csv.cub: 'cub' is a built-in dataset's name"),
        ("birds", {"paths": {"birds": "/somewhere"}}, "data.csv.birds and data.paths.birds both name"),
        ("birds", {"csv_text": GOOD.replace("b/1.jpg,2", "b/1.jpg,two")}, "data.csv.birds: /"),
    ],
)
def test_the_plan_refuses_a_bad_name_a_built_in_name_two_sources_and_a_bad_csv(folder, name, more, said):
    written(folder, more.pop("csv_text", GOOD))
    config = {"preset": "smoke", "data": {"csv": {name: str(folder / "birds.csv")}, **more}}
    with pytest.raises(ConfigError, match=said.replace(".", r"\.")):
        Plan.load(CONFIG_DIR, config)


def prepared(folder, tmp_path, planned=None):
    spec = datasets.add_csv(
        "birds", written(folder, GOOD) if not (folder / "birds.csv").exists() else folder / "birds.csv"
    )
    out = tmp_path / "data" / "real" / "birds" / "manifest.csv"
    prepare.prepare("birds", "real", tmp_path / "data", out, csv_sha256=planned or spec.csv_sha256)
    return spec, out


def test_prepare_links_the_images_in_place_and_writes_their_manifest(folder, tmp_path):
    spec, out = prepared(folder, tmp_path)
    table = manifest.read(out)
    assert table["path"].iloc[0] == "user-data/a/1.jpg" and (out.parent / table["path"].iloc[0]).is_file()
    assert os.readlink(out.parent / "user-data") == str(folder.resolve())
    assert sorted(set(table["split"])) == ["gallery", "query", "train"]
    with pytest.raises(DatasetError, match="changed after the workflow was planned"):
        prepared(folder, tmp_path, planned="0" * 64)


def test_a_moved_csv_of_the_same_content_gets_its_link_pointed_again_an_edited_one_not(folder, tmp_path):
    _, out = prepared(folder, tmp_path)
    before = out.read_bytes()
    moved = shutil.move(folder, tmp_path / "moved")
    spec = datasets.add_csv("birds", moved / "birds.csv")
    assert prepare.relink(spec, out.parent) == (tmp_path / "moved").resolve()
    assert prepare.relink(spec, out.parent) is None  # pointed right already
    assert out.read_bytes() == before and (out.parent / "user-data" / "a" / "1.jpg").is_file()
    (moved / "birds.csv").write_text(GOOD.replace("d/2.jpg,4", "d/3.jpg,4"))
    shutil.copy(moved / "d" / "2.jpg", moved / "d" / "3.jpg")
    assert prepare.relink(datasets.add_csv("birds", moved / "birds.csv"), out.parent) is None  # prepare reruns


def test_a_step_the_workflow_starts_finds_the_csv_dataset_by_its_environment(folder, monkeypatch):
    written(folder, GOOD)
    monkeypatch.setenv(datasets.CSV_DATASETS, pd.Series({"birds": str(folder / "birds.csv")}).to_json())
    assert datasets.get("birds").evaluation == "query_gallery" and datasets.get("birds").label == "birds"


def test_a_batch_the_csv_datasets_classes_cannot_fill_is_refused_when_the_plan_loads(folder, tmp_path):
    """Smoke's batch (16 at 4 per class: 4 classes) on 6 training classes: the baselines fit, the
    fair table's fold trainings (2 folds: 3 classes each) do not, and the message gives a batch
    that fits; with that batch the plan loads."""
    lines = ["path,label,split"] + [
        f"c{c}/{i}.png,{c},{'train' if c < 6 else 'validation'}" for c in range(10) for i in range(5)
    ]
    images(tmp_path / "many", [line.split(",")[0] for line in lines[1:]])
    (tmp_path / "many" / "many.csv").write_text("\n".join(lines) + "\n")
    config = {"preset": "smoke", "data": {"csv": {"many": str(tmp_path / "many" / "many.csv")}}, "datasets": ["many"]}
    with pytest.raises(
        ConfigError,
        match=r"needs 4 classes, but its fold trainings keep 3 of many's training classes: .*"
        r"per_dataset: \{many: \{batch: \{size: 12, per_class: 4\}\}\}",
    ):
        Plan.load(CONFIG_DIR, config)
    fitting = {**config, "per_dataset": {"many": {"batch": {"size": 12, "per_class": 4}}}}
    assert "many" in Plan.load(CONFIG_DIR, fitting).datasets_of("suite.fair")


def test_the_reports_fixture_note_says_which_datasets_are_your_own_images(folder):
    from dmlbench.report.aggregate import TOY_NOTE, toy_note

    written(folder, GOOD)
    plan = smoke(folder, datasets=["birds"], per_dataset={"birds": {"batch": {"size": 2, "per_class": 2}}})
    specs = [jobs.of(plan).fair_aggregate_spec("suite.fair"), jobs.of(plan).aggregate_spec("suite.baselines")]
    assert [spec["own_data"] for spec in specs] == [["birds"], ["birds"]]
    assert toy_note(["birds"]).startswith(TOY_NOTE) and "birds: your own images (data.csv)" in toy_note(["birds"])
    assert toy_note([]) == TOY_NOTE
