"""The CSV route of docs/howto/add-dataset.md as written: the page's CSV (synthetic images at its
paths) and config file, its command through the real Snakemake (the smoke preset's fair table on
the CSV's dataset), then the CSV moved with its images (nothing reruns) and edited (its dataset
reruns)."""

import io
import re
import shlex
import shutil
import sys

import numpy as np
import pandas as pd
import pytest

from dmlbench.data.fixture_images import class_image

from conftest import REPO, python_env
from processes import run

PAGE = REPO / "docs" / "howto" / "add-dataset.md"


def _blocks(language: str) -> list[str]:
    """The code blocks of the page's CSV section (the page opens with it)."""
    section = PAGE.read_text().split("\n## A dataset module")[0]
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def _command(work) -> list[str]:
    """The page's command as written, Snakemake given this checkout's Snakefile."""
    (line,) = _blocks("bash")[0].strip().splitlines()
    words = shlex.split(line)
    assert words[:3] == ["python", "-m", "snakemake"]
    return [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), *words[3:]]


def test_the_page_opens_with_the_csv_route():
    assert PAGE.read_text().startswith("# Adding a dataset\n\n## Your own images: one CSV, no code\n")
    assert "(howto/add-dataset.md#your-own-images-one-csv-no-code)" in (REPO / "docs" / "datasets.md").read_text()


@pytest.mark.slow
def test_the_pages_csv_runs_the_smoke_fair_table_then_a_move_reruns_nothing_and_an_edit_reruns_it(tmp_path):
    work = tmp_path / "work"
    config = _blocks("yaml")[0]
    csv_file = re.search(r"birds: (\S+\.csv)", config).group(1)
    table = pd.read_csv(io.StringIO(_blocks("csv")[0]), dtype=str, keep_default_na=False)
    csv = work / csv_file
    rng = np.random.default_rng(0)
    for path, label in zip(table["path"], table["label"]):  # paths relative to the CSV's folder
        (csv.parent / path).parent.mkdir(parents=True, exist_ok=True)
        class_image(int(label), rng, (44, 44)).save(csv.parent / path)
    csv.write_text(_blocks("csv")[0])
    (work / "my-birds.yaml").write_text(config)
    assert "--configfile my-birds.yaml" in _blocks("bash")[0]

    done = run(_command(work), timeout=1200, capture_output=True, text=True, env=python_env(), cwd=work)
    assert done.returncode == 0, done.stderr[-4000:]
    fair = pd.read_csv(work / "reports/smoke/suite.fair/fair_table.csv")
    assert set(fair["dataset"]) == {"birds"} and set(fair["method"]) == {"ms", "dro_topk_m", "ephn_2nd"}
    (prepared,) = work.glob("data/*/*/birds/manifest.csv")
    assert set(pd.read_csv(prepared)["split"]) == {"train", "query", "gallery"}  # the page's flags
    link = prepared.parent / "user-data"
    assert link.resolve() == (csv.parent / "images").resolve()

    moved = work / "elsewhere" / csv.parent.name  # the folder moved, the config pointed at it
    shutil.move(csv.parent, moved)
    (work / "my-birds.yaml").write_text(config.replace(csv_file, f"elsewhere/{csv_file}"))
    again = run(_command(work), timeout=600, capture_output=True, text=True, env=python_env(), cwd=work)
    assert again.returncode == 0, again.stderr[-4000:]
    assert "Nothing to be done" in again.stdout + again.stderr
    assert "birds: the CSV moved, its content unchanged" in again.stderr
    assert link.resolve() == (moved / "images").resolve()

    edited = moved / csv.name  # a query and a gallery image trade places: the content changed
    lines = edited.read_text().splitlines()
    flipped = [n for n, line in enumerate(lines) if line.endswith(",validation,1,0")][-1]
    lines[flipped] = lines[flipped].replace(",1,0", ",0,1")
    lines[flipped + 1] = lines[flipped + 1].replace(",0,1", ",1,0")
    edited.write_text("\n".join(lines) + "\n")
    planned = run([*_command(work), "-n"], timeout=600, capture_output=True, text=True, env=python_env(), cwd=work)
    assert planned.returncode == 0, planned.stderr[-4000:]
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", planned.stdout, re.M))
    # 3 methods: 2 search rounds (trials 2, parallel 1) and one final job each
    assert jobs.get("prepare") == "1" and jobs.get("fair_round") == "6" and jobs.get("fair_final") == "3"
