"""The real Snakemake DAG: the smoke preset end to end, the full preset as a dry run, config errors."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from dmlbench.config.plan import Plan

import processes
from report_cells import cells_showing_ids
from conftest import CONFIG_DIR, REPO, full_plan, python_env, snakemake_command
from dmlbench.config.jobs import of as jobs_of


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return processes.run(
        snakemake_command(workdir, *args), timeout=1800, capture_output=True, text=True, env=python_env()
    )


def job_counts(output: str) -> dict[str, int]:
    table = output[output.index("Job stats:") :]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


@pytest.mark.slow
@pytest.mark.xdist_group("full_dry_run")
def test_full_preset_dry_run_lists_every_job(full_dry_run):
    result, workdir = full_dry_run
    counts = job_counts(result.stdout)
    listed = "\n".join(line for line in result.stdout.splitlines() if "metrics.json" in line or "summary.md" in line)
    plan = full_plan()
    assert counts["prepare"] == len(plan.datasets) == 6
    fold_runs = [run for run in plan.runs("suite.knobs") if plan.knob_run_index("suite.knobs")[run].fold is not None]
    # train writes metrics.json; a joined knob step's fold runs are its knob_joined job's; a run
    # another experiment trains is a link to it (train_alias)
    links = [run for run in plan.runs() if plan.trained_as(run) != run]
    assert counts["train"] == len(plan.runs()) - len(fold_runs) - len(links) and "evaluate" not in counts
    assert counts["train_alias"] == len(links) > 0
    analyses = [e for e in plan.experiment_ids if plan.is_analysis(e)]
    fair = [e for e in plan.experiment_ids if plan.is_fair(e)]
    assert fair == ["suite.fair"] and counts["fair_aggregate"] == 1  # its jobs: tests/test_fair.py
    knobs = [e for e in plan.experiment_ids if plan.is_knobs(e)]
    assert knobs == ["suite.knobs"] and counts["knob_aggregate"] == 1  # its runs: tests/test_knob_paths.py
    joined = sum(
        1 for path in plan.knob_paths("suite.knobs") for step in path.paths.steps if "evaluation" in step.moved
    )  # the steps that join fold models, over the 16 paths
    assert len(plan.knob_paths("suite.knobs")) == 16
    assert counts["knob_joined"] == joined * 2 * 5  # × methods × seeds: one job trains a step's folds and joins them
    assert len(fold_runs) == counts["knob_joined"] * plan.knob_folds
    assert counts["aggregate"] == len(plan.experiment_ids) - len(analyses) - len(fair) - len(knobs)
    assert counts["analyse"] == len(analyses) >= 1
    ephn = {e for e in plan.experiment_ids if e.startswith("ephn.")}
    assert ephn == {"ephn.t1", "ephn.f2", "ephn.f3", "ephn.f4", "ephn.f5", "ephn.f6"}
    for experiment in ephn - {"ephn.f2", "ephn.f5"}:
        for run in plan.runs(experiment):
            assert f"{run.path('full')}/metrics.json" in listed

    def cells(key):
        return {(run.method, run.dataset) for run in plan.runs(key)}

    def seeded(key):
        """Each cell's seeds: the experiment's, or more where a claim reads it (`claim_seeds`)."""
        seeds, per_cell = plan.seeds_of(key)
        return {cell: set(per_cell.get(cell, seeds)) for cell in cells(key)}

    assert len(cells("ephn.f4")) == 4 * 4 * 5  # datasets × methods × group sizes
    fastap = {e for e in plan.experiment_ids if e.startswith("fastap.")}
    assert fastap == {"fastap.t2", "fastap.t3", "fastap.f3", "fastap.grad"}
    for experiment in fastap - {"fastap.grad"}:
        for run in plan.runs(experiment):
            assert f"{run.path('full')}/metrics.json" in listed
    assert "reports/full/fastap.grad/summary.md" in listed
    assert len(cells("fastap.t2")) == 3 * 4 and len(cells("fastap.t3")) == 3 * 3
    profs = {e for e in plan.experiment_ids if e.startswith("profs.")}
    assert profs == {"profs.t1", "profs.t2", "profs.f2", "profs.f3"}
    for experiment in profs:
        for run in plan.runs(experiment):
            assert f"{run.path('full')}/metrics.json" in listed
    assert len(cells("profs.t1")) == 3 * 22 and len(cells("profs.f2")) == 3 * 4 * 7
    assert len(cells("profs.t2")) == 3 * 7 and len(cells("profs.f3")) == 3 * 6
    for experiment in plan.experiment_ids:  # every run a cell's seeds ask for, and no other
        seeds = {}
        for run in plan.runs(experiment):
            seeds.setdefault((run.method, run.dataset), set()).add(run.seed)
            assert f"{run.path('full')}/metrics.json" in result.stdout
        assert seeds == seeded(experiment), experiment
        if plan.experiments[experiment].get("reported") and seeds:  # a table with paper numbers: at least five
            least = 6 if experiment == "profs.t1" else 5  # profs Table 1: six, for its HNCM claims' power
            assert all(set(range(least)) <= s for s in seeds.values()), experiment
    from dmlbench.config import verdict_spec

    # one per paper (ms, dro, ephn, fastap, profs) and the suite's own claims (suite.modern)
    assert counts["certificate"] == len(verdict_spec.certified_papers(plan)) == 6
    assert "suite" in verdict_spec.certified_papers(plan)
    assert not any(workdir.iterdir()) or {p.name for p in workdir.iterdir()} <= {".snakemake"}


def test_config_typo_stops_before_any_job(tmp_path):
    result = snakemake(tmp_path, "-n", "--cores", "1", "--config", "preset=smoke", "experiments=[suite.baseline]")
    assert result.returncode != 0
    assert "unknown experiment id 'suite.baseline' (did you mean 'suite.baselines'?)" in result.stderr + result.stdout
    assert not (tmp_path / "results").exists() and not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    "args",
    [
        # the documentation's example commands, as printed (dry runs)
        ["-n", "--cores", "2", "--config", "preset=demo", "seeds=[0,1,2]"],
        ["-n", "--cores", "2", "--config", "preset=smoke", "experiments=[suite.baselines]", "datasets=[cub]"],
        [
            "-n",
            "--cores",
            "2",
            "--config",
            "preset=demo",
            "experiments=[suite.baselines]",
            "overrides={optimizer: {lr: 1.0e-4}, epochs: 3}",
        ],
        ["-n", "--cores", "all", "--resources", "gpu=8", "--config", "experiments=[ms.t2]"],
        [
            "-n",
            "--cores",
            "all",
            "--resources",
            "gpu=8",
            "--config",
            "preset=full",
            "experiments=[ms.t2]",
            "data={paths: {cub: /data/CUB_200_2011}}",
        ],
        ["-n", "--cores", "2", "--config", "preset=smoke", "data={cache: null, download: false}"],
        ["-n", "--workflow-profile", str(REPO / "workflow/profiles/local"), "--config", "experiments=[ms.t2]"],
    ],
)  # the profile's own line plans the whole full preset: the same jobs as the shared `full_dry_run`
def test_readme_example_commands_plan_their_jobs(tmp_path, args):
    result = snakemake(tmp_path, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "train" in job_counts(result.stdout)


def test_three_seeds_from_the_command_line_give_three_runs_each(tmp_path):
    result = snakemake(
        tmp_path, "-n", "--cores", "2", "--config", "preset=demo", "seeds=[0,1,2]", "experiments=[suite.baselines]"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    plan = Plan.load(CONFIG_DIR, {"preset": "demo", "experiments": ["suite.baselines"]})
    assert job_counts(result.stdout)["train"] == 3 * len(plan.runs())
    assert "seed2/metrics.json" in result.stdout


def test_wrong_setting_value_stops_before_any_job(tmp_path):
    result = snakemake(
        tmp_path, "-n", "--cores", "1", "--config", "preset=smoke", "overrides={optimizer: {name: adamax}}"
    )
    assert result.returncode != 0
    assert (
        "setting optimizer.name: 'adamax' is not one of ['adam', 'adamw', 'rmsprop', 'sgd']"
        in result.stderr + result.stdout
    )
    assert not (tmp_path / "results").exists() and not (tmp_path / "data").exists()


@pytest.mark.slow
def test_smoke_narrowed_to_an_experiment_and_a_dataset_runs_to_the_end(tmp_path):
    """…with a data root whose name has a space and a non-ASCII letter (every path is quoted)."""
    result = snakemake(
        tmp_path,
        "--cores",
        "2",
        "--config",
        "preset=smoke",
        "experiments=[suite.baselines,ephn.t1]",
        "datasets=[digits]",
        "data={root: 'dätä dir'}",
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "skipping ephn.t1: none of its datasets ['cars'] is among datasets=['digits']" in result.stderr
    table = pd.read_csv(tmp_path / "reports/smoke/suite.baselines/table.csv")
    assert set(table["dataset"]) == {"digits"}
    assert not (tmp_path / "reports/smoke/ephn.t1").exists()
    assert (tmp_path / "reports/smoke/index.html").exists()
    assert (tmp_path / "dätä dir" / "fixture" / "16x6-40px" / "digits" / "manifest.csv").exists()

    # Damaged outputs: each rerun names what it finds and sets it aside; rerunning until done
    # makes everything again.
    args = (
        "--cores",
        "2",
        "--config",
        "preset=smoke",
        "experiments=[suite.baselines]",
        "datasets=[digits]",
        "data={root: 'dätä dir'}",
    )

    def rerun_until_done() -> str:
        said = []
        for _ in range(5):
            result = snakemake(tmp_path, *args)
            said.append(result.stderr)
            if result.returncode == 0:
                return "\n".join(said)
        raise AssertionError(said[-1][-4000:])

    runs = sorted((tmp_path / "results/smoke/suite.baselines/digits").glob("*/seed0"))
    model = runs[0] / "model.pt"
    model.write_bytes(model.read_bytes()[:1000])
    (runs[0] / "metrics.json").write_text('{"metrics": "x"')  # its numbers damaged too: asked for again
    text = rerun_until_done()
    assert "training it again" in text and "Traceback" not in text  # the damaged model is not reused
    torch.load(model, weights_only=True)  # trained again: whole
    metrics = runs[1] / "metrics.json"
    metrics.write_text('{"metrics": "x"')
    (runs[0] / "metrics.json").touch()  # a newer input: the table is made again
    text = rerun_until_done()
    assert f"{metrics.relative_to(tmp_path)} is not a metrics file" in text and "Traceback" not in text
    assert f"{runs[1].relative_to(tmp_path)}: " in text and "(evaluated by the train step)" in text  # not trained again
    assert pd.read_csv(tmp_path / "reports/smoke/suite.baselines/table.csv")["n"].eq(1).all()


@pytest.mark.slow
def test_smoke_and_demo_in_turn_rerun_nothing_of_each_other(tmp_path):
    """The presets' fixtures differ in size; each keeps its own, so running one never remakes the
    data (and so the runs) of the other."""
    narrowed = ["experiments=[suite.baselines]", "subset={suite.baselines: {datasets: [cub], methods: [ms]}}"]
    smoke = ("--cores", "2", "--config", "preset=smoke", *narrowed)
    done = snakemake(tmp_path, *smoke)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Nothing to be done" in snakemake(tmp_path, "-n", *smoke).stdout  # what the check below relies on
    demo = snakemake(tmp_path, "--cores", "2", "--until", "cache", "--config", "preset=demo", *narrowed)
    assert demo.returncode == 0, demo.stderr[-4000:]
    assert "prepare" in job_counts(demo.stdout + demo.stderr)  # the demo's own fixture was made
    again = snakemake(tmp_path, "-n", *smoke)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout, again.stdout[-3000:]
    made = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.glob("data/fixture/*/cub/manifest.csv"))
    assert made == ["data/fixture/16x6-40px/cub/manifest.csv", "data/fixture/24x10-48px/cub/manifest.csv"]


@pytest.mark.slow
def test_smoke_preset_end_to_end(tmp_path):
    result = snakemake(tmp_path, "--cores", "2", "--config", "preset=smoke")
    assert result.returncode == 0, result.stderr[-4000:]
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    for run in plan.runs():
        folder = tmp_path / run.path("smoke")
        for name in ("config.json", "env.json", "epochs.jsonl", "metrics.json", "model.pt"):
            assert (folder / name).exists(), folder / name
        metrics = json.loads((folder / "metrics.json").read_text())["metrics"]
        sizes = ("small_", "medium_", "large_") if run.dataset == "vehicleid" else ("",)
        for size in sizes:  # VehicleID: each of its three test lists
            assert {f"{size}{m}" for m in ("recall@1", "nmi", "f1", "map@r")} <= set(metrics)
    table = pd.read_csv(tmp_path / "reports/smoke/suite.baselines/table.csv")
    assert set(table["dataset"]) == {"cub", "cars", "sop", "inshop", "digits"}
    trained = table[~table["reference"]]
    assert set(trained["method"]) == {"contrastive", "triplet_semihard", "ms"}
    assert {"recall@1", "nmi", "f1", "map@r"} <= set(trained["metric"])
    untrained = table[table["reference"]]  # every dataset's no-training rows; raw pixels for digits alone
    assert set(untrained["dataset"]) == set(table["dataset"])
    assert set(untrained.loc[untrained["kind"] == "pixels", "dataset"]) == {"digits"}
    assert len(list(tmp_path.glob("results/smoke/reference/*/metrics.json"))) >= 5
    runs = pd.read_csv(tmp_path / "reports/smoke/suite.baselines/runs.csv")
    one = runs.iloc[0]
    stored = json.loads(
        (
            tmp_path / plan.find_run("suite.baselines", one["dataset"], one["method"], 0).path("smoke") / "metrics.json"
        ).read_text()
    )["metrics"]["recall@1"]
    assert one["recall@1"] == pytest.approx(100 * stored)
    html = (tmp_path / "reports/smoke/index.html").read_text()
    for word in ("R@1", "NMI", "F1", "MAP@R", "recall_at_k.png", "learning_curves.png"):
        assert word in html
    assert "ms.f1/figure.png" in html
    assert "<img src='ms.t1/retrieved/cub.png'" in html  # the retrieved images of ms beside raw (fixture data)
    weights = pd.read_csv(tmp_path / "reports/smoke/ms.f1/weights.csv")
    assert set(weights["loss"]) == {"contrastive", "triplet", "lifted", "binomial"}
    for name in (
        "ephn.f2/figure.png",
        "ephn.f5/figure.png",
        "ephn.f3/triplet_moves.png",
        "ephn.f6/triplet_scatter.png",
        "ephn.f4/sweep.png",
    ):
        assert name in html
    assert "largest difference" in (tmp_path / "reports/smoke/ephn.f2/summary.md").read_text()
    corner = pd.read_csv(tmp_path / "reports/smoke/ephn.f2/corner.csv").set_index(["loss", "p"])
    for p in (0.4, 0.8):  # the report shows the paper's claim: L2nd shrinks the bad corner
        pulled = corner["share_dS_an_total_positive"]
        assert pulled[("1st", p)] > pulled[("2nd", p)]
    moves = pd.read_csv(tmp_path / "reports/smoke/ephn.f3/moves.csv")
    assert set(moves["after_epoch"]) == {0, 2} and moves["triplets"].sum() > 0
    scatter = pd.read_csv(tmp_path / "reports/smoke/ephn.f6/scatter.csv")
    assert set(scatter["after_epoch"]) == {0, 1, 2}
    landing = (tmp_path / "reports/index.html").read_text()
    assert "smoke/index.html" in landing and "ran</span>" in landing and "(fixture data)" in landing
    contents = json.loads((tmp_path / "reports/smoke/contents.json").read_text())
    statuses = {e["id"]: e["status"] for p in contents["papers"] for e in p["experiments"]}
    assert statuses["suite.baselines"] == statuses["ms.t1"] == statuses["dro.t1"] == "ran"
    assert statuses["fastap.t2"] == "ran" and statuses["fastap.grad"] == "computed"
    fastap = pd.read_csv(tmp_path / "reports/smoke/fastap.t2/table.csv")
    assert set(fastap["dataset"]) == {"sop", "vehicleid"}
    assert set(fastap.loc[fastap["dataset"] == "vehicleid", "metric"]) == {"large_recall@1"}
    assert statuses["ms.f1"] == "computed" and statuses["ms.t2"] == "quoted only"
    assert statuses["profs.t1"] == "ran" and statuses["profs.t2"] == "quoted only"
    profs = pd.read_csv(tmp_path / "reports/smoke/profs.t1/table.csv")
    profs = profs[~profs["reference"]]
    assert set(profs["method"]) == {"m_profs", "m_profs_hncm"}
    assert {"nmi", "f1", "recall@1", "recall@4", "recall@1 (test-selected)"} <= set(profs["metric"])
    selected = profs[profs["metric"] == "recall@1 (test-selected)"].set_index("method")["mean"]
    last = profs[profs["metric"] == "recall@1"].set_index("method")["mean"]
    assert (selected >= last).all()  # the best epoch includes the last
    assert "test-selected" in (tmp_path / "reports/smoke/profs.t1/table.md").read_text()
    assert "not comparable with the paper's" in (tmp_path / "reports/smoke/ms.t1/table.md").read_text()
    for page in (tmp_path / "reports/smoke/index.html", tmp_path / "reports/index.html"):
        text = page.read_text()
        anchors = set(re.findall(r"id='([^']+)'", text))
        for link in re.findall(r"(?:href|src)='([^']+)'", text):
            assert link[1:] in anchors if link.startswith("#") else (page.parent / link).exists(), link
    for path in (tmp_path / "reports/smoke").rglob("*"):  # readable by the group and the web server
        assert path.stat().st_mode & 0o044 == 0o044, path
    assert statuses["suite.fair"] == "ran"
    fair = pd.read_csv(tmp_path / "reports/smoke/suite.fair/fair_table.csv")
    assert set(fair["method"]) == {"ms", "dro_topk_m", "ephn_2nd"} and set(fair["dataset"]) == {"cub"}
    assert set(fair["mode"]) == {"separated", "concatenated"} and {"p@1", "r_precision", "map@r"} <= set(fair["metric"])
    assert (fair["ci95"] >= 0).all() and (fair["repetitions"] == 2).all()
    for word in (
        "Paper vs fair",
        "fair_map_r.png",
        "separated",
        "concatenated",
        " ± ",
        "vs best",
        "Ranking over the datasets",
        "None: a ranking over datasets needs",
    ):
        assert word in html
    pairs = pd.read_csv(tmp_path / "reports/smoke/suite.fair/fair_pairwise.csv")
    assert len(pairs) == 3 * 2 * len(set(fair["metric"]))  # 3 pairs per column
    tested = pairs["untested"].isna()  # tested pairs are paired; two repetitions equal in difference: "no spread"
    assert pairs[tested]["paired"].all() and set(pairs[~tested]["untested"]) <= {"no spread"} and tested.any()
    ranking = json.loads((tmp_path / "reports/smoke/suite.fair/fair_ranking.json").read_text())
    assert "2 datasets" in ranking["none"]  # smoke: cub alone
    search = tmp_path / "results/smoke/suite.fair/cub/ms/search"
    assert len(pd.read_csv(search / "trials.csv")) == 2 and (search / "study.journal").exists()
    knobs_ran(tmp_path, plan, statuses)
    modern = pd.read_csv(tmp_path / "reports/smoke/suite.modern/table.csv")  # the head's and the trunk's numbers
    trained = modern[~modern["reference"].astype(bool)]
    assert {"recall@1", "recall@1 (trunk feature)", "map@r (trunk feature)"} <= set(trained["metric"])
    quoted = pd.read_csv(tmp_path / "reports/smoke/suite.modern/quoted.csv")
    assert set(quoted["metric"]) == {"recall@1 (trunk feature)"} and quoted["value"].tolist() == [78.7]
    again = snakemake(tmp_path, "-n", "--cores", "2", "--config", "preset=smoke")
    assert "Nothing to be done" in again.stdout + again.stderr
    records_of_every_run(tmp_path, plan)
    seen_in_a_browser(tmp_path / "reports/smoke/index.html", plan, contents)
    assert cells_showing_ids(tmp_path / "reports/smoke/index.html", plan) == []  # labels, never ids, in a table


def test_a_table_cell_showing_an_internal_id_is_found(tmp_path):
    """The check above can fail: a method id, a trunk id and a metric id in cells are each found."""
    page = tmp_path / "index.html"
    page.write_text(
        "<table><tr><th>dro_topk_m@vit_tiny − ms</th><td>DRO-TopK_M</td><td>small_cnn (random init)</td>"
        "<td>large_recall@1</td><td>note: see results/x/dro_topk_m.json</td></tr></table>"
    )
    found = [name for name, _ in cells_showing_ids(page, Plan.load(CONFIG_DIR, {"preset": "demo"}))]
    assert found == ["dro_topk_m", "small_cnn", "large_recall@1"]


def knobs_ran(workdir: Path, plan, statuses: dict) -> None:
    """suite.knobs' report: each path's cumulative steps add up to its total, and so do its shares
    with the remainder; the runs on folds were scored on the test half, the waterfall is on the
    page and the landing page has its line."""
    assert statuses["suite.knobs"] == "ran"
    folder = workdir / "reports/smoke/suite.knobs"
    attribution = pd.read_csv(folder / "attribution.csv")
    for (dataset, method), rows in attribution.groupby(["dataset", "method"]):
        knobs = rows[~rows["knob"].isin(["total", "remainder"])]
        assert set(knobs["knob"]) == {"data", "selection", "evaluation"}
        total = rows.loc[rows["knob"] == "total", "share"].item()
        shared = knobs["share"].sum() + rows.loc[rows["knob"] == "remainder", "share"].item()
        assert shared == pytest.approx(total, abs=1e-9)  # every digit in the CSV, the gap's rows too
        if method != "gap":
            assert knobs["cumulative_in_path_order"].sum() == pytest.approx(total, abs=1e-9)
    steps = pd.read_csv(folder / "steps.csv")
    paper = steps[(steps["method"] == "ms") & (steps["step"] == "paper")]
    stored = [
        json.loads(
            (workdir / plan.find_run("suite.knobs", "cub", "ms@ms-paper", s).path("smoke") / "metrics.json").read_text()
        )
        for s in (0, 1)
    ]
    selects_on_test = jobs_of(plan).knob_aggregate_spec("suite.knobs")["recipes"][0]["test_selected"]  # ms.t2's table
    assert paper[["seed0", "seed1"]].iloc[0].tolist() == pytest.approx(
        [100 * (m["test_selected"] if selects_on_test else m["metrics"])["recall@1"] for m in stored], abs=1e-3
    )
    for run in plan.runs("suite.knobs"):  # which rows a fold's scoring reads: tests/test_knob_paths.py
        fold = json.loads((workdir / run.path("smoke") / "config.json").read_text())["data"].get("fold")
        if fold:
            assert fold["scored_on"] == "test_half"
            assert "test_selected" not in json.loads((workdir / run.path("smoke") / "metrics.json").read_text())
    assert (folder / "waterfalls/ms_cub.png").exists()
    assert "waterfalls/ms_cub.png" in (workdir / "reports/smoke/index.html").read_text()
    assert "the gap of RAW+VTHM (MS) over Contrastive" in (workdir / "reports/index.html").read_text()


def records_of_every_run(workdir: Path, plan) -> None:
    """What a finished smoke run keeps and reports: no checkpoint, TensorBoard curves equal to its
    epoch lines, its cost, and its rows in the results table, which the documentation's queries read."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    trainings = [p.parent for p in (workdir / "results/smoke").rglob("epochs.jsonl")]
    assert len(trainings) == len(plan.trainings())  # a linked run folder (`run_dedup`) trains nothing
    assert not list((workdir / "results/smoke").rglob("checkpoint.pt"))
    for folder in trainings:
        epochs = [json.loads(line) for line in (folder / "epochs.jsonl").read_text().splitlines()]
        events = EventAccumulator(str(folder / "tensorboard"))
        events.Reload()
        curve = events.Scalars("loss")
        assert [e.step for e in curve] == [row["epoch"] for row in epochs]
        assert [e.value for e in curve] == pytest.approx([row["loss"] for row in epochs], rel=1e-6)
        spent = json.loads((folder / "cost.json").read_text())
        assert (
            spent["epochs"] == len(epochs)
            and spent["images"]
            == sum(r["steps"] for r in epochs) * json.loads((folder / "config.json").read_text())["batch"]["size"]
        )
        assert spent["train_seconds"] == pytest.approx(sum(r["seconds"] for r in epochs), abs=1e-3)
    expected = []
    for run in plan.runs():
        result = json.loads((workdir / run.path("smoke") / "metrics.json").read_text())
        expected += [
            (run.experiment, run.dataset, run.method, run.seed, key, value) for key, value in result["metrics"].items()
        ]
    table = pd.read_parquet(workdir / "results/smoke/runs.parquet")
    tested = table[table["split"].isin(["test", "small", "medium", "large"])]
    names = tested["split"].where(tested["split"] == "test", tested["split"] + "_")
    got = sorted(
        zip(
            tested["experiment"],
            tested["dataset"],
            tested["method"],
            tested["seed"],
            names.str.replace("test", "") + tested["metric"],
            tested["value"],
        )
    )
    assert got == sorted(expected)
    assert (table["percent"] == 100 * table["value"]).where(table["value"].notna(), True).all()
    ms_cub = table[
        (table["experiment"] == "ms.t1")
        & (table["method"] == "ms")
        & (table["dataset"] == "cub")
        & (table["metric"] == "recall@1")
        & (table["split"] == "test")
    ]
    assert set(ms_cub["paper_percent"]) == {66.85}  # the ms paper's Table 1, RAW+VTHM on CUB
    asked = subprocess.run(
        [
            sys.executable,
            "-m",
            "dmlbench",
            "results",
            "--preset",
            "smoke",
            "--csv",
            "SELECT method, dataset, avg(value) AS recall FROM runs WHERE experiment = "
            "'suite.baselines' AND split = 'test' AND metric = 'recall@1' GROUP BY ALL",
        ],
        cwd=workdir,
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert asked.returncode == 0, asked.stderr
    answer = pd.read_csv(__import__("io").StringIO(asked.stdout)).set_index(["method", "dataset"])["recall"]
    by_hand = (
        pd.DataFrame(
            [e for e in expected if e[0] == "suite.baselines" and e[4] == "recall@1"],
            columns=["e", "dataset", "method", "seed", "m", "v"],
        )
        .groupby(["method", "dataset"])["v"]
        .mean()
    )
    assert answer.sort_index().tolist() == pytest.approx(by_hand.sort_index().tolist())
    import shlex

    readme = (REPO / "docs" / "run-records.md").read_text()
    queries = [shlex.split(line)[4:] for line in readme.splitlines() if line.startswith("python -m dmlbench results ")]
    assert len(queries) >= 3
    for query in queries:  # the documentation's examples, on this smoke run's table
        query = [word for i, word in enumerate(query) if word != "--preset" and query[i - 1] != "--preset"]
        answered = subprocess.run(
            [sys.executable, "-m", "dmlbench", "results", "--preset", "smoke", "--csv", *query],
            cwd=workdir,
            env=python_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert answered.returncode == 0 and len(answered.stdout.splitlines()) >= 2, (query, answered.stderr)
    html = (workdir / "reports/smoke/index.html").read_text()
    assert "Cost ledger" in html and "device-hours" in html
    assert f"cost: {len(trainings)} trainings" in (workdir / "reports/index.html").read_text()


def seen_in_a_browser(page, plan, contents) -> None:
    """The page as Chromium draws it at 1400 pixels: no horizontal scrolling, every image drawn,
    and each table's rows those of the experiment's layout, in the page's order."""
    import browser

    from dmlbench.report import index, layout

    try:
        seen = browser.inspect(page, width=1400)
    except browser.Unavailable as reason:
        pytest.skip(f"no browser here: {reason}")
    assert seen["scrollWidth"] <= seen["viewport"] == 1400, seen["scrollWidth"]
    assert seen["images"] and all(i["w"] > 0 and i["shown"] > 0 for i in seen["images"]), seen["images"]

    def rows(experiment: str) -> list[str]:  # the paper's rows, after the no-training rows of what ran
        exp = plan.experiments[experiment]
        table = page.parent / experiment / "table.csv"
        summary = pd.read_csv(table) if table.exists() else None
        grid = layout.with_references(layout.table_layout(exp, index._labels(plan, exp)), summary)
        return [row.label for row in grid.rows]

    def fair_rows(experiment: str) -> list[list[str]]:  # per dataset: paper, its methods, …; then paper vs fair
        frame = pd.read_csv(page.parent / experiment / "fair_table.csv")
        tables = []
        for dataset in dict.fromkeys(frame["dataset"]):
            mine = frame[frame["dataset"] == dataset]
            tables.append(
                [
                    name
                    for paper, group in mine.groupby("paper", sort=False)
                    for name in [plan.papers[paper], *dict.fromkeys(group["label"])]
                ]
            )
        return tables + [list(pd.read_csv(page.parent / experiment / "paper_vs_fair.csv")["label"])]

    expected = []
    for e in (e for p in contents["papers"] for e in p["experiments"] if not plan.is_analysis(e["id"])):
        if plan.is_fair(e["id"]):
            expected += fair_rows(e["id"]) if e["status"] == "ran" else []
        elif plan.is_knobs(e["id"]):
            continue  # no table of a paper's layout (its waterfalls are among the images)
        elif (
            e["status"] not in ("quoted only", "figure only")
            or plan.experiments[e["id"]].get("reported")
            or plan.experiments[e["id"]].get("quoted")
        ):  # a figure the paper gives no numbers for: a note
            expected.append(rows(e["id"]))
    assert [t["rows"] for t in seen["tables"]] == expected
    assert all(t["box"] <= 1400 for t in seen["tables"])  # wide tables scroll inside their box


def test_gpu_smoke_plans_each_papers_real_backbone_and_input_size_with_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # as on a GPU machine
    plan = Plan.load(CONFIG_DIR, {"preset": "gpu-smoke"})
    full = full_plan()
    papers = {run.experiment.split(".")[0] for run in plan.runs()}
    assert papers == {"ms", "dro", "ephn", "fastap", "profs", "suite"}  # suite.modern: ViT-S/16 at 224
    for run in plan.runs():
        ours = plan.resolve(run)
        paper = full.resolve(full.find_run(run.experiment, run.dataset, run.method, 0))
        assert ours["model"]["backbone"] == paper["model"]["backbone"]
        assert ours["input"] == paper["input"] and ours["model"]["embedding_dim"] == paper["model"]["embedding_dim"]
        assert ours["device"] == "auto" and ours["data"]["store"]
    monkeypatch.undo()
    off = Plan.load(CONFIG_DIR, {"preset": "gpu-smoke", "cpu_fallback": None})
    assert off.cpu_fallback is None and off.resolve(off.runs()[0])["input"]["crop"] == 227


@pytest.mark.slow
def test_gpu_smoke_through_snakemake_with_gpu_slots_on_this_cpu(tmp_path):
    """Two trainings of BN-Inception (ms and dro, cub) through one device slot; every paper's
    backbone and input size is planned in the test above (on a GPU the preset runs them all)."""
    chosen = "experiments=[ms.t1,dro.t1]"
    result = snakemake(tmp_path, "--cores", "2", "--resources", "gpu=1", "--config", "preset=gpu-smoke", chosen)
    assert result.returncode == 0, result.stderr[-4000:]
    plan = Plan.load(CONFIG_DIR, {"preset": "gpu-smoke", "experiments": ["ms.t1", "dro.t1"]})
    assert len(plan.runs()) == 2
    for run in plan.runs():
        folder = tmp_path / run.path("gpu-smoke")
        assert "recall@1" in json.loads((folder / "metrics.json").read_text())["metrics"]
        config = json.loads((folder / "config.json").read_text())
        assert config["input"]["crop"] == (64 if plan.cpu_fallback else plan.resolve(run)["input"]["crop"])
    logs = "\n".join(p.read_text() for p in tmp_path.glob("logs/gpu-smoke/train/**/*.log"))
    assert logs.count("[gpu-slot] device 0") == len(plan.runs())  # every training through the wrapper
    page = (tmp_path / "reports/gpu-smoke/index.html").read_text()
    assert ("Reduced size" in page) == bool(plan.cpu_fallback)


@pytest.mark.slow
def test_the_digits_demo_shows_learning_every_method_beats_the_raw_pixels_over_three_seeds(tmp_path):
    """The demo's digits setting (issue #33): each trained method's MAP@R on the test digits, averaged
    over seeds 0-2, above the raw pixels' row of the same table."""
    result = snakemake(
        tmp_path,
        "--cores",
        "2",
        "--config",
        "preset=demo",
        "experiments=[suite.baselines]",
        "datasets=[digits]",
        "seeds=[0,1,2]",
    )
    assert result.returncode == 0, result.stderr[-4000:]
    table = pd.read_csv(tmp_path / "reports/demo/suite.baselines/table.csv")
    map_at_r = table[table["metric"] == "map@r"]
    raw_pixels = map_at_r.loc[map_at_r["kind"] == "pixels", "mean"].item()
    trained = map_at_r[~map_at_r["reference"]].set_index("method")
    assert set(trained.index) == {"contrastive", "triplet_semihard", "ms"} and trained["n"].eq(3).all()
    assert (trained["mean"] > raw_pixels).all(), (trained["mean"].to_dict(), raw_pixels)
