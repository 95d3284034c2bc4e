"""Where a report's numbers come from: the code's commit, the date, the preset and its settings,
and per experiment the settings that decide its numbers, the preset's beside the paper's (the
`full` preset runs every experiment in its paper's setting)."""

from __future__ import annotations

import datetime
import json
import subprocess
from pathlib import Path

from dmlbench.data import datasets, manifest
from dmlbench.evaluation.names import dataset_label
from dmlbench.models.names import backbone_label
from dmlbench.core.errors import DmlbenchError
from dmlbench.report.html_templates import Markup, render
from dmlbench.run_config import RunConfig

REPO = Path(__file__).resolve().parents[2]


def commit() -> str:
    """The checkout's commit (and whether it has uncommitted changes), or why it is unknown."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown (git not available)"
    if head.returncode:
        return "unknown (not a git checkout)"
    return head.stdout.strip() + (" with uncommitted changes" if dirty.stdout.strip() else "")


def test_images(plan, dataset: str) -> str:
    """Images the preset evaluates on (from its manifest, once prepared) for `dataset`."""
    path = Path(plan.manifest(dataset))
    if not path.exists():
        return "not prepared"
    try:
        table = manifest.read(path)
    except DmlbenchError:
        return "unreadable"
    return f"{_evaluated(table['split'].value_counts().to_dict()):,}"


def _evaluated(images: dict) -> int:
    """Test images of a split table: VehicleID's large list (the lists share images), else every
    split but train."""
    if "test_large" in images:
        return int(images["test_large"])
    return int(sum(n for split, n in images.items() if split != "train"))


def _settings(resolved: dict) -> dict:
    cfg = RunConfig.from_dict(resolved)
    model, batch = cfg.model, cfg.batch
    return {
        "backbone": backbone_label(model.backbone)
        + ("" if model.pretrained or "random init" in backbone_label(model.backbone) else " (random init)"),
        "embedding": model.embedding_dim,
        "input": f"{cfg.input.crop} of {cfg.input.resize}",
        "batch": f"{batch.size} ({batch.per_class}/class)",
        "epochs": cfg.epochs,
    }


def experiment_rows(plan) -> list[dict]:
    """Per experiment this preset trains: its first run's settings beside the paper's (the same
    run as the catalogue defines it, without the preset's layers; the knob experiment's steps have
    no paper setting of their own)."""
    rows = []
    for key in plan.experiment_ids:
        if plan.is_analysis(key) or not plan.runs(key):
            continue
        run = plan.runs(key)[0]
        ours = _settings(plan.resolve(run))
        paper = {} if plan.experiments[key].get("kind") == "knobs" else _settings(plan.paper_setting(run))
        seeds = sorted({r.seed for r in plan.runs(key)})
        test = {
            d: (test_images(plan, d), f"{_evaluated(datasets.get(d).expected.images):,}")
            for d in plan.datasets_of(key)
            if not datasets.get(d).write_shipped
        }
        rows.append(
            {"experiment": key, "dataset": run.dataset, "seeds": seeds, "ours": ours, "paper": paper, "test": test}
        )
    return rows


def panel(plan, preset_dir: Path) -> Markup:
    """The provenance panel of a preset's page."""
    preset = plan.preset
    rows = [
        {
            **row,
            "test": "; ".join(f"{dataset_label(d)} {ours} / {paper}" for d, (ours, paper) in row["test"].items())
            or "–",
        }
        for row in experiment_rows(plan)
    ]
    return render(
        "provenance.html",
        now=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        commit=commit(),
        preset=plan.name,
        description=preset.get("description") or "",
        source=str(preset["data"]["source"]),
        seeds=str(preset.get("seeds")),
        overrides=json.dumps(preset.get("overrides") or {}, sort_keys=True),
        cpu_fallback=json.dumps(plan.cpu_fallback, sort_keys=True) if plan.cpu_fallback else None,
        abouts=[(name, datasets.get(name).about) for name in plan.datasets if datasets.get(name).about],
        names=["backbone", "embedding", "input", "batch", "epochs"],
        rows=rows,
    )
