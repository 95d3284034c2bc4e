"""Errors a user can cause by a value, a file or the machine: each is a message naming the file, key
or value and what to do, through the real commands (Snakemake, `python -m dmlbench`), never a
traceback; and nothing a failed step leaves behind is a partial output."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dmlbench.config.plan import Plan

from conftest import CONFIG_DIR, REPO, full_plan, python_env
from dmlbench.config.jobs import of as jobs_of
from processes import run

VENV_BIN = Path(sys.executable).parent


def snakemake(workdir: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    command = [str(VENV_BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args]
    return run(command, timeout=300, capture_output=True, text=True, env=env or python_env())


def dmlbench(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return run(
        [sys.executable, "-m", "dmlbench", *args],
        timeout=300,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(python_env(), PYTHONPATH=str(REPO)),
    )


def no_traceback(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr + result.stdout, result.stderr


# --- 12: jobs run with Snakemake's own interpreter ----------------------------------------------


def test_jobs_run_with_snakemakes_interpreter_when_the_environment_is_not_activated(tmp_path):
    """`.venv/bin/snakemake` with a PATH whose `python` is another one: the job still runs."""
    other = tmp_path / "other-bin"
    other.mkdir()
    for name in ("python", "python3"):
        (other / name).write_text("#!/bin/sh\necho 'the python on PATH ran' >&2\nexit 3\n")
        (other / name).chmod(0o755)
    path = os.pathsep.join(
        [str(other)] + [p for p in os.environ["PATH"].split(os.pathsep) if Path(p).resolve() != VENV_BIN.resolve()]
    )
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    target = f"{Plan.load(CONFIG_DIR, {'preset': 'smoke'}).data_dir}/digits/manifest.csv"
    result = snakemake(
        tmp_path / "work", "--cores", "1", "--config", "preset=smoke", "--", target, env=dict(env, PATH=path)
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "the python on PATH ran" not in result.stderr
    assert (tmp_path / "work" / target).exists()


# --- 11: a preset is a name in workflow/config/presets, or a file given by preset_file -----------


@pytest.mark.parametrize(
    "preset", ["../presets/smoke", str(CONFIG_DIR / "presets" / "smoke.yaml"), str(CONFIG_DIR / "presets" / "smoke")]
)
def test_a_preset_given_as_a_path_is_refused_naming_the_known_presets(tmp_path, preset):
    result = snakemake(tmp_path, "-n", "--cores", "1", "--config", f"preset={preset}")
    assert result.returncode != 0
    said = result.stderr + result.stdout
    assert f"unknown preset {preset!r}" in said
    assert "demo, full, gpu-smoke, smoke" in said and "preset_file=PATH" in said
    assert "MissingInputException" not in said and 'File "' not in said  # the message alone


def test_a_preset_file_elsewhere_is_read_with_preset_file_under_its_own_name(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text((CONFIG_DIR / "presets" / "smoke.yaml").read_text())
    result = snakemake(
        tmp_path / "work",
        "-n",
        "--cores",
        "1",
        "--config",
        f"preset_file={mine}",
        "experiments=[suite.baselines]",
        "datasets=[cub]",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "reports/mine/index.html" in result.stdout and "results/mine/suite.baselines/cub/" in result.stdout
    (tmp_path / "smoke.yaml").write_text(mine.read_text())  # a built-in preset's name: its folders
    result = snakemake(tmp_path / "work", "-n", "--cores", "1", "--config", f"preset_file={tmp_path}/smoke.yaml")
    assert result.returncode != 0 and "rename the file" in result.stderr + result.stdout


# --- 8: an image over PIL's pixel limit -------------------------------------------------------


@pytest.fixture
def cub_with_a_huge_image(tmp_path):
    """A CUB fixture whose second image is a 20,000 × 10,000 PNG (24 KB on disk, 1-bit)."""
    from PIL import Image

    from dmlbench.data.prepare import prepare

    source = tmp_path / "fixture" / "cub" / "manifest.csv"
    table = prepare("cub", "fixture", tmp_path, source, fixture_size={"n_classes": 4, "per_class": 2})
    huge = source.parent / table["path"][1]
    Image.new("1", (20000, 10000)).save(huge, format="PNG")
    return source, huge


def test_an_image_over_the_pixel_limit_is_named_with_its_size_and_the_setting(cub_with_a_huge_image):
    source, huge = cub_with_a_huge_image
    cache = source.parent / "cache32"
    result = dmlbench("cache", "--manifest", str(source), "--size", "32", "--output", str(cache / "manifest.csv"))
    assert result.returncode == 1
    no_traceback(result)
    assert f"image {huge} is 20,000 × 10,000 = 200,000,000 pixels" in result.stderr
    assert "data.max_image_pixels" in result.stderr
    assert not cache.exists()
    store = source.parent / "store32"
    store.mkdir()  # as Snakemake makes it before the job
    result = dmlbench("store", "--manifest", str(source), "--side", "32", "--output", str(store))
    assert result.returncode == 1 and f"image {huge} is 20,000 × 10,000" in result.stderr
    assert not store.exists() and not list(source.parent.glob(".store32*"))


def test_the_pixel_limit_is_a_validated_setting_that_reaches_the_decoding_steps(tmp_path, cub_with_a_huge_image):
    from dmlbench.data import image_files

    source, huge = cub_with_a_huge_image
    with image_files.open_image(huge, 300_000_000) as image:  # raised: opened (decoded when used)
        assert image.size == (20000, 10000)
    other = source.parent / "cache32" / "manifest.csv"
    result = dmlbench(
        "cache", "--manifest", str(source), "--size", "32", "--output", str(other), "--max-image-pixels", "1000"
    )  # lowered under the fixture's 40 × 40 images
    assert result.returncode == 1 and "over the limit of 1,000 pixels" in result.stderr
    work = tmp_path / "work"
    result = snakemake(
        work,
        "-n",
        "-p",
        "--cores",
        "1",
        "--config",
        "preset=smoke",
        "experiments=[suite.baselines]",
        "data={max_image_pixels: 300000000}",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.count("--max-image-pixels 300000000") == 2 * result.stdout.count("dmlbench prepare")
    result = snakemake(work, "-n", "--cores", "1", "--config", "preset=smoke", "data={max_image_pixels: -5}")
    assert result.returncode != 0
    assert "key data.max_image_pixels: -5 is less than the minimum of 1000000" in result.stderr + result.stdout


# --- 10: a data root that is no folder ----------------------------------------------------------


def test_a_data_root_that_is_a_file_or_a_looping_link_is_named_by_doctor_prepare_and_the_workflow(tmp_path):
    afile, loop = tmp_path / "data-file", tmp_path / "loop"
    afile.write_text("not a folder\n")
    loop.symlink_to(loop)
    for root, said in ((afile, "is a file, not a folder"), (loop, "Too many levels of symbolic links")):
        config = f'{{"experiments": ["suite.baselines"], "datasets": ["digits"], "data": {{"root": "{root}"}}}}'
        result = dmlbench(
            "doctor",
            "--config-dir",
            str(CONFIG_DIR),
            "--preset",
            "smoke",
            "--config",
            config,
            "--timeout",
            "1",
            cwd=tmp_path,
        )
        no_traceback(result)
        assert result.returncode == 1
        assert re.search(
            rf"data: data.root\s+action needed\s+data.root = {re.escape(str(root))} .*{said}", result.stdout
        ), result.stdout
        spec = f'{{"dataset": "digits", "source": "real", "root": "{root}"}}'
        result = dmlbench("prepare", "--spec", spec, "--output", str(root / "real" / "digits" / "manifest.csv"))
        no_traceback(result)
        assert result.returncode == 1 and f"data.root = {root}" in result.stderr and said in result.stderr
    result = snakemake(tmp_path / "work", "--cores", "1", "--config", "preset=smoke", f"data={{root: {afile}}}")
    assert result.returncode != 0 and f"data.root = {afile} is a file" in result.stderr + result.stdout
    assert not (tmp_path / "work" / "results").exists()


# --- 13: values, files and the machine ---------------------------------------------------------


@pytest.mark.parametrize(
    "field, value, said",
    [
        ("class", "abc", "annotation 3 has class = 'abc', not a class id (an integer ≥ 1)"),
        ("class", 2.5, "annotation 3 has class = 2.5, not a class id"),
        ("relative_im_path", 7, "annotation 3 has relative_im_path = 7, not an image path"),
    ],
)
def test_a_wrong_value_in_a_cars_annotation_file_is_named(tmp_path, field, value, said):
    from dmlbench.data.cars_fixture import write_cars_annos

    records = [(f"car_ims/{n:06d}.jpg", 1, 1, 9, 9, 1 + n % 4, 0) for n in range(1, 9)]
    position = ["relative_im_path", "bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2", "class", "test"].index(field)
    records[2] = records[2][:position] + (value,) + records[2][position + 1 :]
    folder = tmp_path / "cars"
    folder.mkdir()
    write_cars_annos(folder / "cars_annos.mat", records, [f"c{i}" for i in range(4)])
    spec = f'{{"dataset": "cars", "source": "real", "root": "{tmp_path}", "path": "{folder}", "download": false}}'
    result = dmlbench("prepare", "--spec", spec, "--output", str(tmp_path / "real" / "cars" / "manifest.csv"))
    no_traceback(result)
    assert result.returncode == 1 and f"{folder / 'cars_annos.mat'}: {said}" in result.stderr


@pytest.mark.parametrize(
    "seeds, said",
    [
        ("[-1]", "seeds.0: -1 is less than the minimum of 0"),
        ("[0,4294967296]", "seeds.1: 4294967296 is greater than the maximum"),
    ],
)
def test_a_seed_out_of_numpys_range_stops_before_any_job(tmp_path, seeds, said):
    result = snakemake(tmp_path, "-n", "--cores", "1", "--config", "preset=smoke", f"seeds={seeds}")
    assert result.returncode != 0 and said in result.stderr + result.stdout


def test_a_device_the_machine_lacks_stops_before_any_job_and_in_the_step(tmp_path):
    import torch

    missing = f"cuda:{torch.cuda.device_count()}"
    result = snakemake(
        tmp_path / "work",
        "--cores",
        "1",
        "--config",
        "preset=smoke",
        "experiments=[suite.baselines]",
        "datasets=[digits]",
        f"overrides={{device: '{missing}'}}",
    )
    assert result.returncode != 0
    assert (
        f"device {missing}: a job here sees {torch.cuda.device_count()} CUDA device(s)" in result.stderr + result.stdout
    )
    assert not (tmp_path / "work" / "data").exists() and not (tmp_path / "work" / "results").exists()
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke", "overrides": {"device": missing}})
    spec = __import__("json").dumps(plan.resolve(plan.runs("suite.baselines")[0]))
    result = dmlbench("train", "--spec", spec, "--run-dir", str(tmp_path / "run"), cwd=tmp_path)
    no_traceback(result)
    assert result.returncode == 1 and f"device {missing}:" in result.stderr and "device: auto" in result.stderr


def test_an_output_folder_that_cannot_be_written_is_named(tmp_path):
    """A results folder on a read-only file system (sysfs stands in: read-only even for root), and a
    results path that is a file."""
    readonly = Path("/sys/kernel")
    if not readonly.is_dir():
        pytest.skip("no /sys/kernel on this machine")
    from dmlbench.data.prepare import prepare

    source = tmp_path / "real" / "digits" / "manifest.csv"
    prepare("digits", "real", tmp_path, source)
    output = readonly / "dmlbench-results" / "splits.csv"
    result = dmlbench("fair-splits", "--manifest", str(source), "--folds", "2", "--output", str(output))
    no_traceback(result)
    assert result.returncode == 1 and str(output.parent) in result.stderr
    assert "writable" in result.stderr
    work = tmp_path / "work"
    (work / "results").mkdir(parents=True)
    (work / "results" / "smoke").write_text("a file where the results go\n")
    result = snakemake(work, "-n", "--cores", "1", "--config", "preset=smoke")
    assert result.returncode != 0
    assert "the output folder results/smoke is a file, not a folder" in result.stderr + result.stdout


# --- 14: the report's files on a full disk; Markdown cells ----------------------------------------


def test_a_full_disk_while_the_report_is_written_leaves_the_old_pair_or_neither(tmp_path, monkeypatch, capsys):
    import errno

    from dmlbench import cli

    output = tmp_path / "reports" / "smoke" / "index.html"
    args = ["report", "--config-dir", str(CONFIG_DIR), "--config", '{"preset": "smoke"}', "--output", str(output)]
    real_write = Path.write_text

    def full_disk_at(name):
        def write_text(self, *a, **k):
            if self.name.startswith(f".{name}."):
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_write(self, *a, **k)

        return write_text

    for name in ("contents.json", "index.html"):
        monkeypatch.setattr(Path, "write_text", full_disk_at(name))
        with pytest.raises(SystemExit):
            cli.main(args)
        assert "is full" in capsys.readouterr().err
        assert not output.exists() and not (output.parent / "contents.json").exists()
        assert not [p.name for p in output.parent.iterdir() if p.name.startswith(".")]
    monkeypatch.setattr(Path, "write_text", real_write)
    cli.main(args)
    before = output.read_text(), (output.parent / "contents.json").read_text()
    (tmp_path / "reports" / "smoke" / "suite.baselines").mkdir()  # the next report would differ
    for name in ("contents.json", "index.html"):
        monkeypatch.setattr(Path, "write_text", full_disk_at(name))
        with pytest.raises(SystemExit):
            cli.main(args)
        assert (output.read_text(), (output.parent / "contents.json").read_text()) == before


def test_a_label_with_a_bar_or_a_line_break_stays_in_its_markdown_cell(tmp_path):
    from test_report import fake_run

    from dmlbench.report import aggregate, markdown

    label = "MS | margin\nλ=0.5"
    assert markdown.cells(markdown.row([label, "1.00"])) == ["MS | margin λ=0.5", "1.00"]
    plan = full_plan()
    spec = jobs_of(plan).aggregate_spec("dro.f4")
    method = plan.runs("dro.f4")[0].method
    spec["method_labels"][method] = label
    files = [fake_run(tmp_path, run, {"recall@1": 0.6, "recall@2": 0.7}) for run in plan.runs("dro.f4")]
    aggregate.aggregate(spec, files, tmp_path / "out")
    lines = (tmp_path / "out" / "table.md").read_text().splitlines()
    header = next(line for line in lines if line.startswith("| method"))
    row = next(line for line in lines if line.startswith("| MS"))
    assert row.startswith("| MS \\| margin λ=0.5 |")
    assert len(markdown.cells(row)) == len(markdown.cells(header))
    assert markdown.cells(row)[0] == "MS | margin λ=0.5"


def test_a_fair_table_label_with_a_bar_or_a_line_break_stays_in_its_cell(tmp_path):
    import json

    import pandas as pd

    from dmlbench.core.io import write_json
    from dmlbench.report import fair_tables, markdown

    plan = Plan.load(CONFIG_DIR, {"preset": "smoke", "experiments": ["suite.fair"]})
    spec = json.loads(json.dumps(jobs_of(plan).fair_aggregate_spec("suite.fair")))
    spec["folder"] = str(tmp_path / "DATASET" / "METHOD")
    first = next(iter(spec["methods"]))
    spec["methods"][first]["label"] = "MS | α\nβ"
    for method in spec["methods"]:
        folder = tmp_path / "cub" / method
        write_json(
            folder / "final" / "summary.json",
            {
                "repetitions": 2,
                "capped_folds": 0,
                "fold_trainings": 4,
                "per_repetition": [
                    {mode: {k: 0.5 + r / 100 for k in fair_tables.METRICS} for mode in fair_tables.MODES}
                    for r in range(2)
                ],
                **{mode: {k: {"mean": 0.5, "ci95": 0.01} for k in fair_tables.METRICS} for mode in fair_tables.MODES},
            },
        )
        write_json(
            folder / "search" / "best.json",
            {"params": {"loss.a": 1.0}, "paper": {"loss.a": 2.0}, "trials": 2, "diverged": 0, "objective": 0.2},
        )
        pd.DataFrame({"slot": [0, 1], "fold0_stopped_by": ["patience"] * 2}).to_csv(
            folder / "search" / "trials.csv", index=False
        )
    fair_tables.aggregate(spec, tmp_path / "out")
    lines = (tmp_path / "out" / "fair_table.md").read_text().splitlines()
    header = next(line for line in lines if line.startswith("| method"))
    row = next(line for line in lines if line.startswith("| MS"))
    assert markdown.cells(row)[0] == "MS | α β" and len(markdown.cells(row)) == len(markdown.cells(header))


@pytest.mark.parametrize(
    "name, listed, edit, said",
    [
        ("sop", "Ebay_train.txt", lambda text: text.replace(" 1 1 ", " x1 1 ", 1), "line 2 has the class_id 'x1'"),
        (
            "inshop",
            "list_eval_partition.txt",
            lambda text: text.replace("   id_0", "   id_x", 1),
            "line 3 has the item id",
        ),
        ("cars", "names.csv", lambda text: "\udcff", "is not a text list"),
    ],
)
def test_a_garbled_value_or_file_in_a_dataset_list_is_named(tmp_path, name, listed, edit, said):
    from dmlbench.data import acquire, datasets, fixtures

    spec = datasets.get(name)
    fixtures.write(
        name, tmp_path / "files", n_classes=4, per_class=2, **({"layout": "folders"} if name == "cars" else {})
    )
    layout = acquire.complete_layout(spec, tmp_path / "files")
    raw = acquire.extract([tmp_path / "files" / f.filename for f in layout.files], tmp_path / "raw")
    path = next(raw.rglob(listed))
    path.write_bytes(edit(path.read_text()).encode("utf-8", "surrogateescape"))
    run_spec = f'{{"dataset": "{name}", "source": "real", "root": "{tmp_path}", "path": "{raw}", "download": false}}'
    result = dmlbench("prepare", "--spec", run_spec, "--output", str(tmp_path / "real" / name / "manifest.csv"))
    no_traceback(result)
    assert result.returncode == 1 and f"{path}" in result.stderr and said in result.stderr


def test_an_unreadable_image_met_in_a_loader_worker_is_named_without_the_workers_traceback(tmp_path):
    import json

    from dmlbench.data import manifest
    from dmlbench.data.prepare import prepare

    config = {
        "preset": "smoke",
        "experiments": ["suite.baselines"],
        "datasets": ["digits"],
        "data": {"root": str(tmp_path / "data"), "store": False, "cache": None},
        "overrides": {"loader": {"workers": 1}},
    }
    plan = Plan.load(CONFIG_DIR, config)
    spec = plan.resolve(plan.runs("suite.baselines")[0])
    source = Path(spec["data"]["manifest"])
    prepare("digits", "real", tmp_path / "data", source)
    table = manifest.read(source)
    for rel in table.loc[table["split"] == "train", "path"]:
        (source.parent / rel).write_bytes(b"not an image")
    result = dmlbench("train", "--spec", json.dumps(spec), "--run-dir", str(tmp_path / "run"), cwd=tmp_path)
    no_traceback(result)
    assert result.returncode == 1
    assert re.search(r"dmlbench train: error: image \S+ cannot be read", result.stderr), result.stderr


def test_a_dataset_path_that_is_a_file_is_named(tmp_path):
    given = tmp_path / "CUB_200_2011.tgz.txt"
    given.write_text("not the dataset\n")
    spec = f'{{"dataset": "cub", "source": "real", "root": "{tmp_path}", "path": "{given}", "download": false}}'
    result = dmlbench("prepare", "--spec", spec, "--output", str(tmp_path / "real" / "cub" / "manifest.csv"))
    assert result.returncode == 1 and f"data.paths.cub = {given} is a file" in result.stderr


def test_running_out_of_memory_is_named_with_the_settings_that_lower_it(tmp_path, monkeypatch, capsys):
    """What torch's CPU allocator raises (reproduced by the real allocator would take the machine's
    memory, so the step is made to raise it)."""
    import torch

    from dmlbench import cli
    from dmlbench.data import store

    def too_large(*args, **kwargs):
        torch.empty(1 << 62, dtype=torch.uint8)

    monkeypatch.setattr(store, "build", too_large)
    with pytest.raises(SystemExit) as stopped:
        cli.main(["store", "--manifest", "m.csv", "--side", "32", "--output", str(tmp_path / "store32")])
    assert stopped.value.code == 1
    said = capsys.readouterr().err
    assert "dmlbench store: error: out of memory (" in said and "Lower batch.size" in said


def test_the_command_line_and_every_subcommand_print_their_help():
    """argparse formats help texts with %: a lone % in one of them broke `--help` for every command."""
    from dmlbench.cli import parser

    commands = parser()._subparsers._group_actions[0].choices
    for argv in [["--help"], *([name, "--help"] for name in commands)]:
        with pytest.raises(SystemExit) as ended:
            parser().parse_args(argv)
        assert ended.value.code == 0, argv


# --- fifth probe: one line instead of a traceback ------------------------------------------------


def test_a_spec_nested_too_deeply_is_one_line():
    result = dmlbench("reference", "--spec", "[" * 100_000, "--output", "x.json")
    no_traceback(result)
    assert result.returncode == 1
    assert "dmlbench reference: error: --spec is nested too deeply to be settings" in result.stderr


def test_a_file_past_the_size_limit_is_one_line_naming_what_to_do(tmp_path):
    """`ulimit -f` (or a file system's largest file) reached while a step writes: EFBIG, as an
    Optuna journal that grew too large raised it."""
    import resource

    from dmlbench.data.prepare import prepare

    manifest = tmp_path / "fixture" / "cub" / "manifest.csv"
    prepare("cub", "fixture", tmp_path, manifest, fixture_size={"n_classes": 40, "per_class": 6, "image_size": 16})
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))  # noqa: E731
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "dmlbench",
            "fair-splits",
            "--manifest",
            str(manifest),
            "--folds",
            "2",
            "--output",
            str(tmp_path / "folds.csv"),
        ],
        preexec_fn=limit,
        capture_output=True,
        text=True,
        timeout=300,
        env=python_env(),
    )
    no_traceback(result)
    assert result.returncode == 1
    assert (
        f"{tmp_path / 'folds.csv'}: File too large; the file has reached the largest size allowed here" in result.stderr
    )
    assert "ulimit -f" in result.stderr
    assert not (tmp_path / "folds.csv").exists()  # no partial output


# --- fifth probe, by a reviewer who read only the docs (closing note of issue 59) ----------------


@pytest.mark.parametrize(
    "args, said",
    [
        (["results", "--preset", "../../etc", "SELECT 1"], "--preset '../../etc' is not a preset name"),
        (["doctor", "--config", "[1, 2]"], "--config must be a JSON object"),
        (["doctor", "--config", "{not json"], "--config is not valid JSON"),
        (["preflight", "--image-side", "0"], "'0' is not a whole number ≥ 1"),
        (["preflight", "--jobs", "0"], "'0' is not a whole number ≥ 1"),
        (["gpu-slot", "--slots", "-3", "--", "true"], "'-3' is not a whole number ≥ 0"),
        (
            ["gpu-slot", "--slots", "1", "--lock-dir", "/etc/passwd", "--", "true"],
            "gpu-slot --lock-dir /etc/passwd: the folder of the device locks cannot be made",
        ),
    ],
)
def test_bad_command_line_values_are_one_line(tmp_path, args, said):
    result = dmlbench(*args, cwd=tmp_path)
    no_traceback(result)
    assert result.returncode != 0 and said in result.stderr


def test_the_sql_prompt_is_bounded_and_says_what_an_empty_query_is(tmp_path):
    import pandas as pd

    table = tmp_path / "results" / "p" / "runs.parquet"
    table.parent.mkdir(parents=True)
    pd.DataFrame({"value": [0.5]}).to_parquet(table)
    empty = dmlbench("results", "--preset", "p", "", cwd=tmp_path)
    no_traceback(empty)
    assert "give one SELECT over runs (a query that reads), not nothing" in empty.stderr
    for statement, kind in (("DROP TABLE runs", "DROP"), ("SELECT 1; DROP TABLE runs", "SELECT, DROP")):
        refused = dmlbench("results", "--preset", "p", statement, cwd=tmp_path)
        no_traceback(refused)
        assert refused.returncode != 0 and f"not {kind}:" in refused.stderr
    huge = dmlbench(
        "results", "--preset", "p", "--csv", "--max-rows", "3", "SELECT range FROM range(100000000000)", cwd=tmp_path
    )  # a hundred billion rows: three are read
    assert huge.returncode == 0 and huge.stdout.split() == ["range", "0", "1", "2"]
    assert "(the first 3 rows; --max-rows N for more)" in huge.stderr
    piped = subprocess.run(
        f"{sys.executable} -m dmlbench results --preset p --csv 'SELECT * FROM range(100000)' | head -1",
        shell=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(python_env(), PYTHONPATH=str(REPO)),
        timeout=300,
    )
    assert piped.stdout == "range\n" and "Traceback" not in piped.stderr and "BrokenPipe" not in piped.stderr


@pytest.mark.parametrize(
    "config, said",
    [
        ({"data": {"root": ""}}, "key data.root: '' should be non-empty"),
        ({"seeds": [0, 0]}, "key seeds: [0, 0] has non-unique elements"),
        (
            {"data": {"fixture": {"n_classes": 16, "per_class": 6, "image_size": 100000}}},
            "key data.fixture.image_size: 100000 is greater than the maximum of 1024",
        ),
    ],
)
def test_a_root_that_is_no_folder_a_seed_twice_or_a_huge_fixture_is_refused_when_the_plan_loads(config, said):
    from dmlbench.core.errors import ConfigError

    with pytest.raises(ConfigError) as error:
        Plan.load(CONFIG_DIR, {"preset": "smoke", **config})
    assert said in str(error.value)
    assert (
        Plan.load(CONFIG_DIR, {"preset": "smoke", "data": {"root": "data/"}}).data_dir
        == Plan.load(CONFIG_DIR, {"preset": "smoke", "data": {"root": "./data"}}).data_dir
    )  # one folder, one spelling


def test_a_yaml_alias_bomb_is_refused_before_it_fills_the_memory(tmp_path):
    import time

    from dmlbench.core.errors import ConfigError

    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):  # ten to the ninth values once expanded
        previous, name = chr(96 + level), chr(97 + level)
        lines.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 10)}]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    started = time.monotonic()
    with pytest.raises(ConfigError, match="expands to more than 1,000,000 values through its aliases"):
        Plan.load(CONFIG_DIR, {"preset_file": str(bomb)})
    assert time.monotonic() - started < 30


def test_the_version():
    import dmlbench

    said = run(
        [sys.executable, "-m", "dmlbench", "--version"], capture_output=True, text=True, timeout=120, env=python_env()
    )
    assert said.returncode == 0 and said.stdout.strip() == f"dmlbench {dmlbench.__version__}"


def test_the_first_help_shows_the_users_commands_and_the_steps_have_their_own():
    from dmlbench import cli

    shown = subprocess.run(
        [sys.executable, "-m", "dmlbench", "--help"], capture_output=True, text=True, env=python_env()
    ).stdout
    listed = [
        line.split()[0]
        for line in shown.split("commands:")[1].splitlines()[2:]
        if line.startswith("    ") and not line.startswith("     ")
    ]
    assert listed == [*cli.USER_COMMANDS, "steps"]
    steps = subprocess.run(
        [sys.executable, "-m", "dmlbench", "steps", "--help"], capture_output=True, text=True, env=python_env()
    ).stdout
    for name in ("train", "prepare", "fair-round", "knob-aggregate", "aggregate", "report"):
        assert f"    {name} " in steps and f"    {name} " not in shown
    for argv in (["train", "--help"], ["steps", "train", "--help"]):  # the rules' form and the listed one
        with pytest.raises(SystemExit) as ended:
            cli.parser().parse_args(argv)
        assert ended.value.code == 0


def test_a_top_level_methods_choice_is_refused_with_the_subset_it_means():
    from dmlbench.core.errors import ConfigError

    with pytest.raises(
        ConfigError,
        match=r"\('methods' was unexpected\); an experiment's methods are chosen per "
        r"experiment: 'subset=\{<experiment>: \{methods: \[...\]\}\}'",
    ):
        Plan.load(CONFIG_DIR, {"preset": "smoke", "methods": ["ms"]})


def test_every_option_of_every_command_says_what_it_is():
    import argparse

    from dmlbench import cli

    commands = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    silent = [
        f"{name} {action.option_strings or action.dest}"
        for name, sub in commands.choices.items()
        for action in sub._actions
        if action.help is None and not isinstance(action, argparse._HelpAction)
    ]
    assert silent == []
