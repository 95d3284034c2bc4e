"""Aggregation: mean ± std over seeds, paper numbers and differences, sweep figures."""

import json

import pandas as pd
import pytest
from scipy import stats

from dmlbench.config.plan import Plan
from dmlbench.report import aggregate, index

from conftest import CONFIG_DIR, full_plan
from dmlbench.config.jobs import of as jobs_of


def fake_run(root, run, metrics, epochs=2):
    folder = root / run.path("full")
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(
        json.dumps(
            {
                "run": {  # made up: no settings to compare (fingerprint)
                    "experiment": run.experiment,
                    "dataset": run.dataset,
                    "method": run.method,
                    "seed": run.seed,
                },
                "metrics": metrics,
                "fingerprint": None,
            }
        )
    )
    (folder / "config.json").write_text(
        json.dumps(
            {"run": {"experiment": run.experiment, "dataset": run.dataset, "method": run.method, "seed": run.seed}}
        )
    )
    (folder / "epochs.jsonl").write_text(
        "".join(json.dumps({"epoch": e + 1, "loss": 1.0 / (e + 1)}) + "\n" for e in range(epochs))
    )
    return folder / "metrics.json"


def test_seeds_aggregate_with_paper_numbers(tmp_path):
    plan = full_plan()
    spec = jobs_of(plan).aggregate_spec("dro.f4")
    files = []
    values = {0: 0.60, 1: 0.62, 2: 0.64, 3: 0.66, 4: 0.68}
    for run in plan.runs("dro.f4"):
        if run.seed in values:  # the five seeds every cell has (a claim's cells have more: claim_seeds)
            files.append(fake_run(tmp_path, run, {"recall@1": values[run.seed], "recall@2": 0.7}))
    aggregate.aggregate(spec, files, tmp_path / "out")
    table = pd.read_csv(tmp_path / "out/table.csv")
    row = table[(table.method == "dro_topk_b") & (table.metric == "recall@1")].iloc[0]
    assert row["mean"] == pytest.approx(64.0)
    assert row["std"] == pytest.approx(pd.Series([60, 62, 64, 66, 68]).std())
    assert row["n"] == 5
    assert row["paper"] == 67.9 and row["difference"] == pytest.approx(64.0 - 67.9)
    half = stats.t.ppf(0.975, 4) * pd.Series([60, 62, 64, 66, 68]).std() / 5**0.5  # 95 % interval: 3.93
    assert row["half"] == pytest.approx(half)
    # δ = 1.05 (1 point and the paper's rounding); ours − paper = −3.90 ± 3.93: the interval reaches
    # beyond −δ (not shown below) and outside ±δ (not shown equivalent): inconclusive, not "reproduced"
    assert row["verdict"] == "inconclusive"
    assert "64.00 ± 3.93 (n=5) / 67.9 / -3.90 / ? inconclusive" in (tmp_path / "out/table.md").read_text()


def test_sweep_experiment_draws_its_figure(tmp_path):
    plan = full_plan()
    files = [fake_run(tmp_path, run, {"recall@1": 0.5}) for run in plan.runs("dro.f1")]
    out = tmp_path / "reports" / "full" / "dro.f1"
    aggregate.aggregate(jobs_of(plan).aggregate_spec("dro.f1"), files, out)
    assert (out / "sweep.png").stat().st_size > 0
    table = pd.read_csv(out / "table.csv")
    assert len(table) == 25 and set(table["method"].str.split("@").str[1]) == {"B80", "B160", "B320", "B480", "B640"}
    index.write(plan, tmp_path / "reports" / "full" / "index.html")
    assert "dro.f1/sweep.png" in (tmp_path / "reports" / "full" / "index.html").read_text()
    landing = (tmp_path / "reports" / "index.html").read_text()
    assert "1 ran" in landing and "partial" in landing  # only dro.f1 of the full catalogue was aggregated here


def test_quoted_rows_are_marked_as_quoted(tmp_path):
    plan = full_plan()
    files = [fake_run(tmp_path, run, {f"recall@{k}": 0.5 for k in (1, 2, 4, 8, 16, 32)}) for run in plan.runs("ms.t2")]
    aggregate.aggregate(jobs_of(plan).aggregate_spec("ms.t2"), files, tmp_path / "out")
    text = (tmp_path / "out/table.md").read_text()
    assert "| HDC (quoted by the paper, not run) | 53.6 |" in text
    assert "50.00 ± 0.00 (n=5) / 66.85 / -16.85 / ▼ below" in text


def _links(page):
    import re

    return re.findall(r"(?:href|src)='([^']+)'", page.read_text())


def test_report_has_contents_statuses_and_every_link_resolves(tmp_path):
    plan = Plan.load(CONFIG_DIR, {"preset": "demo", "experiments": ["suite.baselines"], "datasets": ["digits"]})
    files = [fake_run(tmp_path, run, {"recall@1": 0.5, "recall@2": 0.6}) for run in plan.runs()[:2]]
    out = tmp_path / "reports" / "demo" / "suite.baselines"
    aggregate.aggregate(jobs_of(plan).aggregate_spec("suite.baselines"), files, out)
    index.write(plan, tmp_path / "reports" / "demo" / "index.html")
    info = json.loads((tmp_path / "reports/demo/contents.json").read_text())
    statuses = {e["id"]: e["status"] for p in info["papers"] for e in p["experiments"]}
    assert statuses["suite.baselines"] == "partial"  # 2 of the 3 planned runs
    assert statuses["ms.t2"] == "quoted only" and statuses["dro.t1"] == "quoted only"
    figure_only = {k for k, s in statuses.items() if s == "figure only"}  # not run here, no numbers in the paper
    assert {"dro.f2", "fastap.f3", "profs.f2", "profs.f3", "ephn.f6"} <= figure_only
    assert all(
        ".f" in k and not (plan.experiments[k].get("reported") or plan.experiments[k].get("quoted"))
        for k in figure_only
    )
    assert [p["paper"] for p in info["papers"]][:4] == ["suite", "ms", "dro", "ephn"]
    page = tmp_path / "reports/demo/index.html"
    text = page.read_text()
    assert "<nav><h2>Contents</h2>" in text and "href='#demo-suite.baselines'" in text
    assert "id='demo-suite.baselines-recall_at_k.png'" in text and "href='#top'" in text
    assert "66.85" in text  # ms.t2's paper number, shown although the preset did not run it
    for key in figure_only:
        assert f"href='#demo-{key}' title='" in text and text.count(
            "<span class='status figure-only'>figure only: the paper prints no numbers</span>"
        ) == 2 * len(figure_only)
    for page in (tmp_path / "reports/demo/index.html", tmp_path / "reports/index.html"):
        ids = set(__import__("re").findall(r"id='([^']+)'", page.read_text()))
        for link in _links(page):
            if link.startswith("#"):
                assert link[1:] in ids, link
            else:
                assert (page.parent / link).exists(), link


def test_fixture_tables_say_so_and_show_verdicts_stamped_as_fixture_data(tmp_path):
    """Fixtures: the difference and the verdict are computed (they test the code) under the note
    that the numbers are not comparable with the paper's."""
    plan = Plan.load(CONFIG_DIR, {"preset": "demo"})
    spec = jobs_of(plan).aggregate_spec("ephn.t1")
    files = [fake_run(tmp_path, run, {f"recall@{k}": 0.5 for k in (1, 2, 4, 8)}) for run in plan.runs("ephn.t1")]
    aggregate.aggregate(spec, files, tmp_path / "out")
    table = pd.read_csv(tmp_path / "out/table.csv")
    assert table["paper"].notna().any()
    text = (tmp_path / "out/table.md").read_text()
    assert "not comparable with the paper's" in text and "test the code that computes them" in text
    row = table[table["paper"].notna()].iloc[0]
    paper = spec["reported"][row["method"]][row["dataset"]][row["metric"]]
    assert row["difference"] == pytest.approx(50.0 - float(paper)) and row["verdict"] == "inconclusive"
    assert f"50.00 (n=1) / {paper} / {50.0 - float(paper):+.2f} / ? inconclusive |" in text


@pytest.mark.parametrize("key, values", [("dro.f1", (90.46, 90.86, 90.18)), ("dro.f5", (90.58, 90.73, 90.21))])
def test_dro_f1_f5_mark_the_recalls_the_supplement_prints(tmp_path, monkeypatch, key, values):
    """Supplement 6.2 prints Recall@1 at PN-ratio 0.006 (B = 640) for three methods: they are in
    the figure's table and drawn as crosses at x = 0.006."""
    from dmlbench.report import figures

    plan = full_plan()
    files = [fake_run(tmp_path, run, {"recall@1": 0.5}) for run in plan.runs(key)]
    drawn = {}
    monkeypatch.setattr(figures, "save", lambda fig, path, spec=None: drawn.setdefault(path.name, fig))
    aggregate.aggregate(jobs_of(plan).aggregate_spec(key), files, tmp_path / "out")
    table = pd.read_csv(tmp_path / "out/table.csv").set_index("method")
    for method, value in zip(("dro_topk_m", "dro_topk_pn_m", "dro_kl_m"), values):
        assert table.loc[f"{method}@B640", "paper"] == value
    assert table["paper"].notna().sum() == 3
    ax = drawn["sweep.png"].axes[0]
    crosses = [line for line in ax.get_lines() if line.get_marker() == "x"]
    assert sorted(y for line in crosses for y in line.get_ydata()) == sorted(values)
    assert {x for line in crosses for x in line.get_xdata()} == {0.006}


def test_paper_numbers_must_name_a_run_of_their_experiment(tmp_path):
    import shutil

    from dmlbench.core.errors import ConfigError

    config = tmp_path / "config"
    shutil.copytree(CONFIG_DIR, config)
    path = config / "experiments" / "dro.yaml"
    path.write_text(
        path.read_text().replace(
            "dro_topk_m@B640: {inshop: {recall@1: 90.46}}", "dro_topk_m@B6400: {inshop: {recall@1: 90.46}}"
        )
    )
    with pytest.raises(ConfigError, match="dro.f1.reported: 'dro_topk_m@B6400' is none of"):
        Plan.load(config, {"preset": "full"})


@pytest.mark.parametrize(
    "layout,message",
    [
        (
            '    joined: {ms: "MS (Wang et al. 2019)", ls_dro: "LS (Wang et al. 2019)"}\n',
            '    joined: {ms: "MS (Wang et al. 2019)", ls_dro: "LS (Wang 2019)"}\n',
        ),
        (
            "    rows: [ms, ls_dro, dro_kl_g_1, dro_kl_g_0.1, dro_kl_g_0.01, dro_kl_g_0.001]\n    joined",
            "    rows: [ms, ls_dro, dro_kl_g_1, dro_kl_g_0.1, dro_kl_g_0.01]\n    joined",
        ),
    ],
)
def test_a_joined_row_names_a_method_and_a_quoted_row(tmp_path, layout, message):
    import shutil

    from dmlbench.core.errors import ConfigError

    config = tmp_path / "config"
    shutil.copytree(CONFIG_DIR, config)
    path = config / "experiments" / "dro.yaml"
    assert layout in path.read_text()
    path.write_text(path.read_text().replace(layout, message))
    with pytest.raises(
        ConfigError,
        match=r"dro.t2.layout.(joined: ls_dro: 'LS \(Wang 2019\)' must join|rows must "
        r"list each method and quoted row once: missing \['dro_kl_g_0.001'\])",
    ):
        Plan.load(config, {"preset": "full"})


def test_header_bands_are_consecutive_columns(tmp_path):
    import shutil

    from dmlbench.core.errors import ConfigError

    config = tmp_path / "config"
    shutil.copytree(CONFIG_DIR, config)
    path = config / "experiments" / "fastap.yaml"
    text = path.read_text()
    band = "ResNet-18: [fastap_random_r18, fastap_hard_r18]"
    assert band in text
    path.write_text(text.replace(band, "ResNet-18: [fastap_random_r18, fastap_random_r50]"))
    with pytest.raises(ConfigError, match=r"fastap.t2.layout.bands.ResNet-18: .* must be consecutive columns"):
        Plan.load(config, {"preset": "full"})


def test_a_title_names_the_epochs_this_preset_records(tmp_path):
    import shutil

    from dmlbench.core.errors import ConfigError

    for preset in ("demo", "smoke", "full"):
        plan = Plan.load(CONFIG_DIR, {"preset": preset})
        epochs = plan.resolve(plan.runs("ephn.f6")[0])["record"]["scatter_epochs"]
        assert f"after epochs {', '.join(map(str, epochs))} (the paper: 0, 5, 10, 15, 40)" in plan.title("ephn.f6")
        assert jobs_of(plan).aggregate_spec("ephn.f6")["title"] == plan.title("ephn.f6")
    config = tmp_path / "config"
    shutil.copytree(CONFIG_DIR, config)
    path = config / "experiments" / "ephn.yaml"
    path.write_text(path.read_text().replace("{record.scatter_epochs}", "{record.scatter}"))
    with pytest.raises(ConfigError, match=r"ephn.f6.title: \{record.scatter\} is no training setting"):
        Plan.load(config, {"preset": "full"})


def test_fair_paper_numbers_keep_the_papers_digits(tmp_path):
    """The paper's Recall@1 beside the fair P@1 as the paper prints it (66.85, 80.70), through the
    CSV the report reads."""
    from dmlbench.config.loading import printed
    from dmlbench.report import fair_section, fair_tables

    frame = pd.DataFrame(
        [
            {"dataset": d, "method": m, "label": m, "mode": "separated", "metric": "p@1", "mean": 60.0, "ci95": 1.0}
            for d, m in (("cub", "ms"), ("cars", "raw_dw"), ("cub", "x"))
        ]
    )
    from dmlbench.config import fair_catalogue

    plan = full_plan()
    recall = fair_catalogue.paper_recall_at_1(plan, "suite.fair", ["cub", "cars"])
    assert recall["ms"]["cub"][0] == "66.85"
    recall["raw_dw"] = {"cars": [printed(plan.experiments["ms.t1"]["reported"]["raw_dw"]["cars"]["recall@1"]), "ms.t1"]}
    spec = json.loads(json.dumps({"toy_data": False, "paper_recall": recall}))  # as the rule sends it
    path = tmp_path / "paper_vs_fair.csv"
    fair_tables.paper_vs_fair(frame, spec).to_csv(path, index=False)
    html = fair_section.paper_vs_fair_table(fair_section.read_paper_vs_fair(path), False)
    assert "<td class='paper'>66.85</td>" in html and "<td class='paper'>80.70</td>" in html
    assert "<td class='paper'>–</td>" in html  # x: no paper number
    assert "<td>-20.7</td>" in html  # 60 − 80.70, from the number


def test_dro_f4_leaves_out_the_recalls_the_paper_does_not_plot():
    metrics = full_plan().experiments["dro.f4"]["table"]["metrics"]
    assert "recall@4" not in metrics and "recall@16" not in metrics


def test_dro_f2_plots_every_recall_of_its_table(tmp_path, monkeypatch):
    from dmlbench.report import figures

    plan = full_plan()
    ks = (1, 10, 20, 30, 40, 50)
    files = [fake_run(tmp_path, run, {f"recall@{k}": 0.5 + k / 200 for k in ks}) for run in plan.runs("dro.f2")]
    drawn = {}
    monkeypatch.setattr(figures, "save", lambda fig, path, spec=None: drawn.setdefault(path.name, fig))
    aggregate.aggregate(jobs_of(plan).aggregate_spec("dro.f2"), files, tmp_path / "out")
    lines = drawn["sweep.png"].axes[0].get_legend_handles_labels()[1]
    assert lines == [f"DRO-TopK_M, recall@{k}" for k in ks]


def test_dro_quotes_wang_et_al_rows_as_quoted_not_as_its_own(tmp_path):
    plan = full_plan()
    ks = (1, 2, 4, 8, 16, 32)
    files = [fake_run(tmp_path, run, {f"recall@{k}": 0.5 for k in ks}) for run in plan.runs("dro.t1")]
    aggregate.aggregate(jobs_of(plan).aggregate_spec("dro.t1"), files, tmp_path / "out")
    table = pd.read_csv(tmp_path / "out/table.csv")
    assert table[table["method"] == "ms"]["paper"].isna().all()  # our MS run: no paper number
    assert table[table["method"] == "dro_topk_m"]["paper"].notna().all()
    text = (tmp_path / "out/table.md").read_text()
    assert "| MS (Wang et al. 2019, d = 512) (quoted by the paper, not run) | 65.7 |" in text
    t2 = plan.experiments["dro.t2"]
    assert "cars" not in t2["reported"]["ms"] and "cars" not in t2["reported"]["ls_dro"]
    assert "cub" in t2["reported"]["ms"]
    assert "ms" not in plan.experiments["dro.f4"]["reported"]


def test_test_selected_epoch_is_the_best_recall_at_1_and_shown_beside_the_last(tmp_path):
    from dmlbench.evaluation.evaluate_run import test_selected_epoch

    history = tmp_path / "epochs.jsonl"
    rows = [
        {"epoch": 1, "loss": 1.0, "recall@1": 0.5, "recall@2": 0.6},
        {"epoch": 2, "loss": 0.9, "recall@1": 0.7, "recall@2": 0.75},
        {"epoch": 3, "loss": 0.8},  # an epoch without evaluation
        {"epoch": 4, "loss": 0.7, "recall@1": 0.7, "recall@2": 0.9},
    ]
    history.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert test_selected_epoch(history) == {"epoch": 2, "recall@1": 0.7, "recall@2": 0.75}
    history.write_text(json.dumps({"epoch": 1, "loss": 1.0}) + "\n")
    assert test_selected_epoch(history) is None

    plan = full_plan()
    spec = jobs_of(plan).aggregate_spec("profs.f3")
    files = []
    seed0 = [run for run in plan.runs("profs.f3") if run.seed == 0]  # one per cell (claims' cells have more)
    for number, run in enumerate(seed0):
        path = fake_run(tmp_path, run, {"recall@1": 0.5})
        data = json.loads(path.read_text())
        data["test_selected"] = {"epoch": 7, "recall@1": 0.5 + number / 100}
        path.write_text(json.dumps(data))
        files.append(path)
    aggregate.aggregate(spec, files, tmp_path / "out")
    table = pd.read_csv(tmp_path / "out/table.csv")
    selected = table[table.metric == "recall@1 (test-selected)"]
    assert len(selected) == len(files) and selected["paper"].isna().all()
    assert sorted(selected["mean"].round(6)) == [50.0 + n for n in range(len(files))]
    text = (tmp_path / "out/table.md").read_text()
    assert "recall@1 (test-selected)" in text and "a choice made on the test set" in text
    runs = pd.read_csv(tmp_path / "out/runs.csv")
    assert set(runs["test-selected epoch"]) == {7}


def test_names_and_statuses_from_a_copied_report_folder_give_no_live_markup(tmp_path):
    """A report folder from elsewhere: its contents.json and its file names reach the landing page
    only as text (no element or attribute they inject)."""
    from html.parser import HTMLParser

    evil = "x'><img src=x onerror=alert(1)>"
    folder = tmp_path / "reports" / f"copied{evil}"
    experiment = folder / "ms.t1"
    experiment.mkdir(parents=True)
    (experiment / f"{evil}.csv").write_text("a\n1\n")
    (experiment / "summary.md").write_text("# s\nsome text\n")
    (folder / "contents.json").write_text(
        json.dumps(
            {
                "preset": "copied",
                "toy_data": False,
                "papers": [
                    {
                        "title": "paper <script>alert(2)</script>",
                        "experiments": [
                            {
                                "id": "ms.t1",
                                "title": "t",
                                "status": "computed' onmouseover='alert(3)",
                                "detail": "d",
                                "figures": [f"{evil}.png"],
                                "paper_numbers": [],
                            }
                        ],
                    }
                ],
            }
        )
    )
    index.write_landing(tmp_path / "reports")

    class Elements(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tags, self.attributes = [], []

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)
            self.attributes += [name for name, _ in attrs]

    page = Elements()
    page.feed((tmp_path / "reports" / "index.html").read_text())
    assert "script" not in page.tags
    assert not {"onerror", "onmouseover"} & set(page.attributes)
    assert "img" not in page.tags
    landing = (tmp_path / "reports" / "index.html").read_text()
    assert "computed' onmouseover='alert(3)" not in landing  # the quote is escaped, shown as text
    assert "computed&#39; onmouseover=&#39;alert(3)" in landing


def test_the_provenance_panel_reads_only_the_preset_it_reports(tmp_path):
    """The paper's setting beside each experiment comes from the catalogue without the preset's
    layers, not from loading `full` (which failed the last job of a smoke run when the full
    preset could not be planned)."""
    import shutil

    from dmlbench.report import provenance

    config = tmp_path / "config"
    shutil.copytree(CONFIG_DIR, config)
    (config / "presets" / "full.yaml").write_text("seeds: [0\n")  # not even YAML
    plan = Plan.load(config, {"preset": "smoke"})
    page = provenance.panel(plan, tmp_path)
    run = plan.runs("ms.t1")[0]
    paper = plan.paper_setting(run)
    assert paper["epochs"] != plan.resolve(run)["epochs"]  # smoke shortens the training; the paper's does not
    row = next(r for r in provenance.experiment_rows(plan) if r["experiment"] == "ms.t1")
    full = full_plan()
    assert (
        row["paper"]["epochs"]
        == paper["epochs"]
        == full.resolve(full.find_run("ms.t1", run.dataset, run.method, run.seed))["epochs"]
    )
    assert "ms.t1" in page
