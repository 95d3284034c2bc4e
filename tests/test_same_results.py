"""The before/after comparison of a preset's results (benchmarks/same_results.py) sees a changed number."""

import json

from benchmarks import same_results


def write(root, metrics: dict, seconds: float, table: str):
    run = root / "results" / "demo" / "x.t1" / "cub" / "ms" / "seed0"
    run.mkdir(parents=True)
    (run / "metrics.json").write_text(json.dumps({"metrics": metrics, "seconds": seconds, "device": "cpu"}))
    report = root / "reports" / "demo" / "x.t1"
    report.mkdir(parents=True)
    (report / "table.csv").write_text(table)
    (report / "timing.csv").write_text(f"ms\n{seconds}\n")


def test_only_a_changed_number_counts(tmp_path):
    write(tmp_path / "a", {"recall@1": 0.5}, 1.0, "m,r\nms,0.5\n")
    write(tmp_path / "b", {"recall@1": 0.5}, 2.0, "m,r\nms,0.5\n")  # other wall-clock times only
    write(tmp_path / "c", {"recall@1": 0.51}, 1.0, "m,r\nms,0.5\n")
    assert same_results.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    found = same_results.compare(tmp_path / "a", tmp_path / "c", "demo")
    assert found["differ"] == ["results/demo/x.t1/cub/ms/seed0/metrics.json"]
    assert same_results.main([str(tmp_path / "a"), str(tmp_path / "c")]) == 1


def test_a_record_dropped_on_purpose_is_named_and_only_that_one(tmp_path):
    write(tmp_path / "a", {"recall@1": 0.5}, 1.0, "m,r\nms,0.5\n")
    write(tmp_path / "b", {"recall@1": 0.5}, 1.0, "m,r\nms,0.5\n")
    fold = tmp_path / "a" / "results" / "demo" / "suite.fair" / "cub" / "ms" / "search" / "trial0" / "fold0"
    fold.mkdir(parents=True)
    (fold / "final_metrics.json").write_text("{}")
    assert same_results.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1  # a file gone: a difference
    pattern = "results/*/suite.fair/*/*/*/*/fold*/final_metrics.json"
    found = same_results.compare(tmp_path / "a", tmp_path / "b", "demo", (pattern,))
    assert found["dropped"] == ["results/demo/suite.fair/cub/ms/search/trial0/fold0/final_metrics.json"]
    assert found["only_before"] == [] and found["differ"] == []
    assert same_results.main([str(tmp_path / "a"), str(tmp_path / "b"), "--dropped", pattern]) == 0
    assert same_results.main([str(tmp_path / "a"), str(tmp_path / "b"), "--dropped", "results/*/x/*"]) == 1


def test_a_run_config_differs_only_where_a_number_could_change(tmp_path):
    """config.json is compared without the side settings (keep, tracking, loader), as the runs'
    fingerprint leaves them out; any other setting is a difference."""
    for name, extra in (
        ("a", {}),
        ("b", {"keep": {"checkpoint_minutes": 0}, "loader": {"workers": 8}}),
        ("c", {"optimizer": {"lr": 0.1}}),
    ):
        run = tmp_path / name / "results" / "demo" / "x.t1" / "cub" / "ms" / "seed0"
        run.mkdir(parents=True)
        (run / "config.json").write_text(json.dumps({"epochs": 2, "keep": {}, "loader": {"workers": 4}, **extra}))
    assert same_results.compare(tmp_path / "a", tmp_path / "b", "demo")["differ"] == []
    assert same_results.compare(tmp_path / "a", tmp_path / "c", "demo")["differ"] == [
        "results/demo/x.t1/cub/ms/seed0/config.json"
    ]


def test_a_linked_run_folder_is_read_through_its_link_and_its_experiments_name_is_no_number(tmp_path):
    """A run folder that is a link to the earlier run it is the same training as (`run_dedup`) is
    compared through the link; only its experiment's name and the tables' fingerprint differ."""
    for name, linked in (("a", False), ("b", True), ("c", True)):
        root = tmp_path / name / "results" / "demo"
        for experiment in ("x.t1", "y.t1"):
            run = root / experiment / "cub" / "ms" / "seed0"
            if linked and experiment == "y.t1":
                run.parent.mkdir(parents=True)
                run.symlink_to("../../../x.t1/cub/ms/seed0")
                continue
            run.mkdir(parents=True)
            value = 0.6 if name == "c" else 0.5
            (run / "metrics.json").write_text(json.dumps({"metrics": {"recall@1": value}}))
            (run / "config.json").write_text(json.dumps({"epochs": 2, "run": {"experiment": experiment}}))
        report = tmp_path / name / "reports" / "demo" / "y.t1"
        report.mkdir(parents=True)
        (report / "runs.csv").write_text(f"method,recall@1,fingerprint\nms,50.0,{name * 8}\n")
    assert same_results.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    found = same_results.compare(tmp_path / "a", tmp_path / "c", "demo")
    assert found["differ"] == [
        "results/demo/x.t1/cub/ms/seed0/metrics.json",
        "results/demo/y.t1/cub/ms/seed0/metrics.json",
    ]
