"""The retrieved-images figure: neighbours against a brute-force loop, the same queries for both
methods, frames that follow correctness, the plan's choice of runs and the report's figure."""

import itertools
import json

import numpy as np
import pandas as pd
import pytest
import torch
from matplotlib.colors import to_hex, to_rgb
from PIL import Image

from dmlbench import models
from dmlbench.config.jobs import of as jobs_of
from dmlbench.config.plan import Plan
from dmlbench.core.errors import ConfigError, DmlbenchError
from dmlbench.evaluation import neighbours
from dmlbench.plots import retrieved as drawing
from dmlbench.report import index, retrieved
from dmlbench.run_config import RunConfig
from dmlbench.training import run_folder

from conftest import CONFIG_DIR, full_plan


def brute_force(queries, gallery, k, own=None):
    """Each query's k most similar gallery items by a plain loop: products summed in Python, ties
    to the higher index, the query's own index skipped."""
    out = []
    for row, q in enumerate(queries):
        scored = []
        for j, g in enumerate(gallery):
            if own is not None and j == own[row]:
                continue
            scored.append((-sum(int(a) * int(b) for a, b in zip(q, g)), -j))
        out.append([-j for _, j in sorted(scored)[:k]])
    return out


@pytest.mark.parametrize("self_retrieval", [True, False])
def test_top_k_is_the_brute_force_ranking_with_ties_and_the_query_left_out(self_retrieval):
    rng = np.random.default_rng(3)
    gallery = rng.integers(-3, 4, size=(40, 6)).astype(np.float32)  # small integers: exact products
    gallery[[5, 11, 17, 29]] = 3  # the largest product any item has with them: ties at the top
    chosen = np.array([11, 0, 17, 33])
    queries = gallery[chosen] if self_retrieval else rng.integers(-3, 4, size=(4, 6)).astype(np.float32)
    queries[0] = 3
    own = chosen if self_retrieval else None
    found, similarity = neighbours.top_k(queries, gallery, 7, own)
    expected = brute_force(queries, gallery, 7, own)
    assert found.tolist() == expected
    assert np.allclose(similarity, [[queries[r] @ gallery[j] for j in row] for r, row in enumerate(expected)])
    assert found[0][:3].tolist() == ([29, 17, 5] if self_retrieval else [29, 17, 11])  # ties: higher index first
    if self_retrieval:  # the reference can fail: kept in, query 11 finds itself, which top_k leaves out
        assert 11 in brute_force(queries, gallery, 7)[0] and 11 not in found[0]
        assert brute_force(queries, gallery, 7)[0] != found[0].tolist()


def test_queries_are_drawn_from_the_labels_one_per_class_by_seed():
    labels = np.repeat(np.arange(10), 6)
    first = neighbours.choose_queries(labels, 4, seed=0)
    assert first.tolist() == neighbours.choose_queries(labels, 4, seed=0).tolist()
    assert len(set(labels[first])) == 4
    assert first.tolist() != neighbours.choose_queries(labels, 4, seed=1).tolist()
    assert sorted(labels[neighbours.choose_queries(labels[:12], 5, seed=0)]) == [0, 1]  # two classes: two queries


def write_dataset(folder, splits):
    """A manifest of small images, 3 of each of 4 classes per split (colour: the class; the
    training classes apart)."""
    folder.mkdir(parents=True)
    rows = []
    for split, label, n in itertools.product(splits, range(4), range(3)):
        name = f"{split}_{label}_{n}.png"
        pixels = np.full((16, 16, 3), 40 + 50 * label, np.uint8)
        pixels[n::4] = 255 - 40 * n
        Image.fromarray(pixels).save(folder / name)
        rows.append({"path": name, "label": label + (11 if split == "train" else 1), "split": split, "super": ""})
    pd.DataFrame(rows).to_csv(folder / "manifest.csv", index=False)
    return folder / "manifest.csv"


def fake_run(root, method, manifest, seed):
    """A finished run folder: a small network at initialisation (`seed`), with its settings."""
    plan = Plan.load(CONFIG_DIR, {"preset": "demo", "experiments": ["ms.t1"]})
    cfg = plan.resolve(plan.find_run("ms.t1", "cub", method, 0))
    cfg["data"] = {"manifest": str(manifest)}
    torch.manual_seed(seed)
    model = models.build(RunConfig.from_dict(cfg).model)
    run_dir = root / method
    run_dir.mkdir()
    torch.save({"model": model.state_dict(), "config": cfg}, run_dir / "model.pt")
    (run_dir / "metrics.json").write_text(json.dumps({"metrics": {"recall@1": seed / 10}}))
    return {
        "role": "headline" if method == "ms" else "baseline",
        "method": method,
        "label": method.upper(),
        "seed": 0,
        "run_dir": str(run_dir),
        "fingerprints": [run_folder.fingerprint(cfg)],
    }


@pytest.mark.parametrize("splits", [("train", "test"), ("train", "query", "gallery")])
def test_both_methods_get_the_same_queries_and_frames_follow_correctness(tmp_path, monkeypatch, splits):
    manifest = write_dataset(tmp_path / "data", splits)
    runs = [fake_run(tmp_path, "ms", manifest, 1), fake_run(tmp_path, "binomial", manifest, 2)]
    spec = {
        "experiment": "ms.t1",
        "dataset": "cub",
        "dataset_label": "CUB-200",
        "k": 3,
        "queries": 3,
        "seed": 0,
        "data_note": "fixture data: synthetic images",
        "runs": runs,
    }
    drawn = []
    monkeypatch.setattr(drawing, "save", lambda fig, path, spec: drawn.append(fig))
    record = retrieved.run(spec, tmp_path / "out/cub.json", tmp_path / "out/cub.png")
    assert json.loads((tmp_path / "out/cub.json").read_text()) == json.loads(json.dumps(record))
    table = pd.read_csv(manifest)
    first, second = record["methods"]
    assert [q["path"] for q in first["queries"]] == [q["path"] for q in second["queries"]]
    assert len({q["label"] for q in first["queries"]}) == 3
    gallery = "test" if "test" in splits else "gallery"
    assert all(q["path"].startswith("test" if gallery == "test" else "query") for q in first["queries"])
    for method in record["methods"]:
        assert [method["fingerprint"]] == next(r["fingerprints"] for r in runs if r["method"] == method["method"])
        for query in method["queries"]:
            paths = [n["path"] for n in query["neighbours"]]
            assert len(paths) == 3 and query["path"] not in paths and all(p.startswith(gallery) for p in paths)
            label_of = dict(zip(table["path"], table["label"]))
            assert [n["correct"] for n in query["neighbours"]] == [label_of[p] == query["label"] for p in paths]
    assert first["correct"] == sum(n["correct"] for q in first["queries"] for n in q["neighbours"])
    assert (first["recall@1"], second["recall@1"]) == (0.1, 0.2)  # the runs' own, beside the few queries
    # the frames: per query row, the query's axes (blue), then each method's k axes, as the record says
    (fig,) = drawn
    framed = [ax for ax in fig.axes if ax.axison]
    colours = [framed_colour(ax) for ax in framed]
    expected = []
    for row in range(3):
        expected.append(drawing.QUERY)
        for method in record["methods"]:
            expected += [drawing.frame_colour(n["correct"]) for n in method["queries"][row]["neighbours"]]
    assert colours == expected
    assert drawing.frame_colour(True) == drawing.CORRECT != drawing.frame_colour(False) == drawing.WRONG
    green, red = to_rgb(drawing.CORRECT), to_rgb(drawing.WRONG)
    assert green[1] > max(green[0], green[2]) and red[0] > max(red[1], red[2])
    shown = " ".join(t.get_text() for t in fig.texts)
    assert "FIXTURE DATA" in shown and "MS: ms, the paper's headline method" in shown


def framed_colour(ax) -> str:
    return to_hex(ax.spines["top"].get_edgecolor())


def test_a_run_of_other_settings_than_the_plans_is_refused(tmp_path):
    manifest = write_dataset(tmp_path / "data", ("train", "test"))
    entry = {**fake_run(tmp_path, "ms", manifest, 1), "fingerprints": ["0" * 64, "1" * 64]}
    with pytest.raises(DmlbenchError, match="other settings than the plan's"):
        retrieved.load(entry)


def test_a_linked_run_trained_under_either_accepted_fingerprint_is_read(tmp_path):
    """A run that is an earlier run's training (`run_dedup`) may hold the numbers of either
    run's settings: the spec lists both and either is read."""
    manifest = write_dataset(tmp_path / "data", ("train", "test"))
    entry = fake_run(tmp_path, "ms", manifest, 1)
    entry["fingerprints"] = ["0" * 64, *entry["fingerprints"]]
    _, _, found, _ = retrieved.load(entry)
    assert found == entry["fingerprints"][1]


def test_the_plan_names_headline_and_baseline_runs_and_their_metrics_as_inputs():
    jobs = jobs_of(Plan.load(CONFIG_DIR, {"preset": "demo"}))
    assert jobs.retrieved_pairs() == [("ms.t1", "cub")]
    spec = jobs.retrieved_spec("ms.t1", "cub")
    assert [(r["role"], r["method"], r["seed"]) for r in spec["runs"]] == [
        ("headline", "ms", 0),
        ("baseline", "binomial", 0),
    ]
    assert "fixture data" in spec["data_note"] and spec["k"] == 5
    assert jobs.retrieved_inputs("ms.t1", "cub") == [
        "results/demo/ms.t1/cub/ms/seed0/metrics.json",
        "results/demo/ms.t1/cub/binomial/seed0/metrics.json",
    ]
    assert jobs.retrieved_outputs() == ["reports/demo/ms.t1/retrieved/cub.json", "reports/demo/ms.t1/retrieved/cub.png"]
    assert (
        jobs_of(Plan.load(CONFIG_DIR, {"preset": "demo", "experiments": ["suite.baselines"]})).retrieved_pairs() == []
    )
    assert jobs_of(full_plan()).retrieved_outputs() == []  # full: no such jobs
    narrowed = Plan.load(CONFIG_DIR, {"preset": "demo", "subset": {"ms.t1": {"methods": ["ms"]}}})
    assert jobs_of(narrowed).retrieved_pairs() == []  # no baseline run: no figure, and no error


@pytest.mark.parametrize(
    "retrieved, message",
    [
        ({"experiments": ["ms.t9"]}, "ms.t9: unknown experiment"),
        ({"experiments": ["suite.baselines"]}, "needs its paper's headline method"),
        ({"experiments": ["ms.t2"]}, "needs its paper's headline method .* and another method"),
        ({"experiments": ["suite.fair"]}, "not a table of trained runs"),
    ],
)
def test_an_entry_that_cannot_be_drawn_is_refused_when_the_plan_loads(retrieved, message):
    with pytest.raises(ConfigError, match=message):
        Plan.load(CONFIG_DIR, {"preset": "demo", "retrieved": retrieved})


def test_the_report_shows_the_figure_with_its_caption(tmp_path):
    plan = Plan.load(CONFIG_DIR, {"preset": "demo", "experiments": ["ms.t1"]})
    folder = tmp_path / "reports/demo/ms.t1/retrieved"
    folder.mkdir(parents=True)
    spec = jobs_of(plan).retrieved_spec("ms.t1", "cub")
    queries = [
        {
            "path": "q.jpg",
            "label": 1,
            "neighbours": [{"path": "g.jpg", "label": 1, "similarity": 0.9, "correct": True}] * 5,
        }
    ] * 4
    methods = [
        {**r, "correct": 20, "of": 20, "protocol": "test split", "images": ".", "queries": queries, "recall@1": r1}
        for r, r1 in zip(spec["runs"], (0.5, None))
    ]
    record = {key: spec[key] for key in ("experiment", "dataset", "dataset_label", "k", "seed", "data_note")}
    (folder / "cub.json").write_text(json.dumps({**record, "methods": methods}))
    Image.new("RGB", (8, 8)).save(folder / "cub.png")
    index.write(plan, tmp_path / "reports/demo/index.html")
    page = (tmp_path / "reports/demo/index.html").read_text()
    assert "<img src='ms.t1/retrieved/cub.png'" in page and "href='ms.t1/retrieved/cub.json'" in page
    assert "id='demo-ms.t1-retrieved-cub'" in page
    assert "<span class='fixture-stamp'>fixture data</span>" in page
    for words in (
        "top-5 gallery images",
        "RAW+VTHM (ours) (ms, the paper&#39;s headline method)",
        "Binomial (binomial, the baseline)",
        "CUB-200 (cub)",
        "Fixture data: synthetic images",
        "ms 20 (the run&#39;s Recall@1 over every query: 50.0 %), binomial 20.",
    ):
        assert words in page, words


def test_a_lost_figure_has_the_page_made_again(tmp_path):
    from dmlbench.orchestration import lost_files

    plan = Plan.load(CONFIG_DIR, {"preset": "demo", "experiments": ["ms.t1"]})
    for path in ["reports/demo/ms.t1/table.csv", "results/demo/runs.parquet", "reports/demo/index.html"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    for run in plan.runs("ms.t1"):
        (tmp_path / run.path("demo")).mkdir(parents=True)
        (tmp_path / run.path("demo") / "metrics.json").write_text("{}")
    for name in ("table.md", "runs.csv", "recall_at_k.png", "learning_curves.png"):
        (tmp_path / "reports/demo/ms.t1" / name).write_text("")
    (tmp_path / "reports/demo/ms.t1/retrieved").mkdir()
    (tmp_path / "reports/demo/ms.t1/retrieved/cub.json").write_text("{}")
    stale, said = lost_files.lost(plan, tmp_path)
    assert stale == [tmp_path / "reports/demo/index.html"]  # cub.png is missing: the page is made again
    (tmp_path / "reports/demo/ms.t1/retrieved/cub.png").write_text("")
    assert lost_files.lost(plan, tmp_path) == ([], [])
