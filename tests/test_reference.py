"""Reference rows (embeddings before any training step) against an independent computation: the
images read with PIL, the network built and applied by hand, ranks by a brute-force sort."""

import json
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image
from test_evaluation import brute_metrics

from dmlbench import models
from dmlbench.config.plan import Plan
from dmlbench.data.prepare import prepare
from dmlbench.evaluation import reference
from dmlbench.run_config import Model, RunConfig

import processes
from conftest import full_plan, python_env
from dmlbench.config.jobs import of as jobs_of

CONFIG_DIR = "workflow/config"
METRICS = ("recall@1", "recall@2", "map@r")


def prepared(tmp_path, dataset, **size):
    manifest = tmp_path / "fixture" / dataset / "manifest.csv"
    prepare(dataset, "fixture", tmp_path, manifest, fixture_size=size or None)
    return manifest


def spec_for(plan, experiment, dataset, method, manifest):
    resolved = plan.resolve(plan.find_run(experiment, dataset, method, 0))
    cfg = RunConfig.from_dict(dict(resolved, data={"manifest": str(manifest)}))
    side = 8 if dataset == "digits" else None
    return reference.spec_of(cfg, reference.key_of(cfg, side, str(manifest)))


def images_by_hand(manifest, rows, resize, crop):
    """The split's images as the network sees them: resized, centre crop, [0, 1], NCHW."""
    out = []
    for path in rows["path"]:
        image = Image.open(manifest.parent / path).convert("RGB").resize((resize, resize), Image.BILINEAR)
        left = (resize - crop) // 2
        image = image.crop((left, left, left + crop, left + crop))
        out.append(torch.from_numpy(np.asarray(image, dtype=np.float32) / 255.0).permute(2, 0, 1))
    return torch.stack(out)


def run_step(spec, output):
    processes.run(
        [sys.executable, "-m", "dmlbench", "reference", "--spec", json.dumps(spec), "--output", str(output)],
        timeout=600,
        check=True,
        env=python_env(),
    )
    return json.loads(output.read_text())


def assert_close(ours: dict, expected: dict):
    for metric in METRICS:
        assert ours[metric] == pytest.approx(expected[metric], abs=1e-6), metric


def smoke_reference(tmp_path, dataset):
    """A fixture of `dataset`, the reference step's result on it, its key and the first seed's
    untrained network built by hand (what train builds right after seeding)."""
    manifest = prepared(tmp_path, dataset, n_classes=8, per_class=6, image_size=40)
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    spec = spec_for(plan, "suite.baselines", dataset, "ms", manifest)
    result = run_step(spec, tmp_path / "reference.json")
    torch.manual_seed(spec["key"]["seed"])
    net = models.build(Model(**dict(spec["key"]["model"], frozen_bn=False))).eval()
    return manifest, result, spec["key"], net


def test_untrained_network_and_trunk_rows_equal_a_computation_by_hand(tmp_path):
    manifest, result, key, net = smoke_reference(tmp_path, "cub")
    table = pd.read_csv(manifest)
    test = table[table["split"] == "test"]
    images = images_by_hand(manifest, test, key["input"]["resize"], key["input"]["crop"])
    with torch.no_grad():
        head = net(images).numpy()
        trunk = net.trunk((images - net.mean) / net.std).mean(dim=(2, 3)).numpy()
    labels = test["label"].to_numpy()
    for kind, embeddings in (("initial", head), ("trunk", trunk)):
        expected = brute_metrics(embeddings, labels, embeddings, labels, (1, 2), self_retrieval=True)
        assert_close(result["rows"][kind], expected)
    assert "pixels" not in result["rows"]  # CUB's images differ in size: no raw-pixel row
    assert result["reference"] == key


def test_raw_pixel_row_of_digits_equals_the_8x8_images_by_hand(tmp_path):
    manifest = prepared(tmp_path, "digits")
    plan = Plan.load(CONFIG_DIR, {"preset": "demo"})
    spec = spec_for(plan, "suite.baselines", "digits", "ms", manifest)
    result = run_step(spec, tmp_path / "reference.json")
    table = pd.read_csv(manifest)
    test = table[table["split"] == "test"]
    pixels = np.stack(
        [np.asarray(Image.open(manifest.parent / p).convert("RGB"), dtype=np.float64).ravel() for p in test["path"]]
    )
    labels = test["label"].to_numpy()
    expected = brute_metrics(pixels, labels, pixels, labels, (1, 2), self_retrieval=True)
    assert_close(result["rows"]["pixels"], expected)
    # the network rows exist too, and the raw pixels are not what the network gives
    assert set(result["rows"]) == {"initial", "trunk", "pixels"}
    assert result["rows"]["initial"]["map@r"] != result["rows"]["pixels"]["map@r"]


def test_a_reference_uses_the_runs_protocol_query_gallery_for_inshop(tmp_path):
    manifest, result, key, net = smoke_reference(tmp_path, "inshop")
    table = pd.read_csv(manifest)
    parts = {}
    for split in ("query", "gallery"):
        rows = table[table["split"] == split]
        with torch.no_grad():
            parts[split] = (
                net(images_by_hand(manifest, rows, key["input"]["resize"], key["input"]["crop"])).numpy(),
                rows["label"].to_numpy(),
            )
    expected = brute_metrics(*parts["query"], *parts["gallery"], (1, 2), self_retrieval=False)
    assert_close(result["rows"]["initial"], expected)


def test_every_table_of_the_full_plan_has_its_reference_jobs():
    plan = full_plan()
    for experiment in plan.experiment_ids:
        if plan.is_analysis(experiment) or plan.is_fair(experiment):
            continue  # the fair table compares tuned methods with each other, without reference rows
        mapping = plan.reference_map(experiment)
        first = min(run.seed for run in plan.runs(experiment))
        assert {(r.dataset, r.method) for r in plan.runs(experiment) if r.seed == first} == set(mapping)
        for name in set(mapping.values()):
            spec = jobs_of(plan).reference_spec(name)
            assert spec["key"]["dataset"] == name.split("-")[0]
            assert plan.manifest(spec["key"]["dataset"]) in jobs_of(plan).reference_inputs(name)
    # shared: one job per dataset × backbone × input × embedding size, not one per run
    assert len(plan._references()) < len(plan.runs()) / 10


def test_runs_that_differ_in_backbone_get_different_references_and_share_otherwise():
    plan = full_plan()
    mapping = plan.reference_map("fastap.t2")
    r18 = {n for (d, m), n in mapping.items() if d == "sop" and m.endswith("r18")}
    r50 = {n for (d, m), n in mapping.items() if d == "sop" and m.endswith("r50")}
    assert len(r18) == 1 and len(r50) == 1 and r18 != r50
    assert "resnet18" in next(iter(r18)) and "resnet50" in next(iter(r50))


def summary_with_references():
    rows = [
        ("digits", "ms", "map@r", 61.3, False, None, None),
        ("digits", "contrastive", "map@r", 58.0, False, None, None),
        ("digits", "ms", "recall@1", 98.0, False, None, None),
        ("digits", "no training: raw pixels", "map@r", 60.5, True, "pixels", "d1"),
        ("digits", "no training: net", "map@r", 62.25, True, "initial", "d1"),
        ("digits", "no training: net", "recall@1", 97.0, True, "initial", "d1"),
    ]
    return pd.DataFrame(rows, columns=["dataset", "method", "metric", "mean", "reference", "kind", "name"]).assign(
        std=float("nan"), n=1, paper=None
    )


def test_the_sentence_gives_each_methods_difference_to_each_reference_row():
    said = references_module().sentences(
        summary_with_references(),
        [["digits", "ms", "d1"], ["digits", "contrastive", "d1"]],
        {"ms": "MS", "contrastive": "Contrastive"},
    )
    assert said == [
        "digits, MAP@R, trained vs no training: MS 61.30 (untrained network 62.25: -0.95; "
        "raw pixels 60.50: +0.80), Contrastive 58.00 (untrained network 62.25: -4.25; "
        "raw pixels 60.50: -2.50)."
    ]


def test_reference_rows_come_first_in_the_paper_layout_with_no_paper_number():
    from dmlbench.report import layout

    exp = {
        "methods": ["ms", "contrastive"],
        "datasets": ["digits"],
        "table": {"metrics": ["map@r"]},
        "reported": {"ms": {"digits": {"map@r": 70.0}}},
    }
    grid = layout.table_layout(exp, {"ms": "MS", "contrastive": "Contrastive"})
    page = layout.render(exp, grid, summary_with_references(), "caption")
    body = page.split("<tbody>")[1]  # the rows' own headers (the head has a verdict and a method column)
    heads = [h.split(">")[-1] for h in body.split("</th>") if "<th class='row" in h]
    assert heads == ["no training: raw pixels", "no training: net", "MS", "Contrastive"]
    first_row = page.split("<tbody>")[1].split("</tr>")[0]
    assert "60.50" in first_row and "<td class='paper'>–</td>" in first_row


def references_module():
    from dmlbench.report import references

    return references


def test_a_garbled_reference_file_is_named_set_aside_and_the_page_removed(tmp_path):
    from dmlbench.core.errors import DmlbenchError
    from dmlbench.report import aggregate

    run = tmp_path / "run" / "metrics.json"
    run.parent.mkdir()
    run.write_text(
        json.dumps(
            {"run": {"experiment": "x", "dataset": "cub", "method": "ms", "seed": 0}, "metrics": {"recall@1": 0.5}}
        )
    )
    garbled = tmp_path / "reference" / "cub-x" / "metrics.json"
    garbled.parent.mkdir(parents=True)
    garbled.write_text('{"reference": {"dataset": "cub"}, "rows": {"initial": ')
    page = tmp_path / "reports" / "index.html"
    page.parent.mkdir()
    page.write_text("old page")
    spec = {"experiment": "x", "title": "x", "table": {"metrics": ["recall@1"]}, "method_labels": {}}
    with pytest.raises(DmlbenchError, match="cub-x/metrics.json is not a reference file"):
        aggregate.aggregate(spec, [run], page.parent / "x", [garbled])
    assert not garbled.exists() and list(garbled.parent.glob("metrics.json.corrupt*"))
    assert not page.exists()


def test_a_suite_experiments_quoted_row_stands_in_its_own_columns_with_no_verdict_column():
    """suite.modern quotes Sph-ViT's trunk-feature numbers: every metric keeps its column, the
    quoted number sits in the one it matches, and the rows have as many cells as the header (a
    quoted row once made the table a paper's, and each row gained a verdict cell its header lacked)."""
    import re

    from dmlbench.report import layout

    exp = {
        "paper": None,
        "methods": ["ms", "contrastive"],
        "datasets": ["digits"],
        "table": {"metrics": ["map@r", "recall@1"]},
        "quoted": {"Authors": {"digits": {"recall@1": 78.7}}},
    }
    grid = layout.table_layout(exp, {"ms": "MS", "contrastive": "Contrastive"})
    page = layout.render(exp, grid, summary_with_references(), "caption")
    head, body = page.split("<tbody>")
    assert "verdict" not in head and "paper" not in head.split("</tr>")[1]  # ours alone, every metric
    widths = {len(re.findall(r"<t[dh][ >]", row)) for row in body.split("</tr>") if "<t" in row}
    assert widths == {1 + 2}  # the row's name and its two metrics
    quoted = next(row for row in body.split("</tr>") if "Authors" in row)
    assert re.findall(r"<td[^>]*>([^<]*)</td>", quoted) == ["–", "78.7"]
