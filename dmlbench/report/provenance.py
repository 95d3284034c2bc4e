"""Where a report's numbers come from: the code's commit, the date, the preset and its settings,
and per experiment the settings that decide its numbers, the preset's beside the paper's (the
`full` preset runs every experiment in its paper's setting)."""

from __future__ import annotations

import datetime
import html
import json
import subprocess
from pathlib import Path

from dmlbench.data import datasets, manifest
from dmlbench.core.errors import DmlbenchError
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
        "backbone": model.backbone + ("" if model.pretrained else " (random init)"),
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


def panel(plan, preset_dir: Path) -> str:
    """The provenance panel of a preset's page."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    preset = plan.preset
    overrides = json.dumps(preset.get("overrides") or {}, sort_keys=True)
    head = (
        f"<p class='note'>Made {html.escape(now)} from commit <code>{html.escape(commit())}</code>, "
        f"preset <b>{html.escape(plan.name)}</b>: {html.escape(preset.get('description') or '')} "
        f"Data: {html.escape(str(preset['data']['source']))}; seeds {html.escape(str(preset.get('seeds')))}; "
        f"settings over each experiment's: <code>{html.escape(overrides)}</code>.</p>"
    )
    if plan.cpu_fallback:
        head += (
            "<p class='note'><b>Reduced size</b>: planned on a machine without a CUDA device, so the "
            "preset's CPU settings replaced its own: <code>"
            + html.escape(json.dumps(plan.cpu_fallback, sort_keys=True))
            + "</code> (the input column "
            "below shows what ran).</p>"
        )
    for name in plan.datasets:
        if datasets.get(name).about:
            head += f"<p class='note'><b>{html.escape(name)}</b> is {html.escape(datasets.get(name).about)}</p>"
    names = ["backbone", "embedding", "input", "batch", "epochs"]
    lines = []
    for row in experiment_rows(plan):
        cells = "".join(
            f"<td>{html.escape(str(row['ours'][n]))}</td>"
            f"<td class='paper'>{html.escape(str(row['paper'].get(n, '–')))}</td>"
            for n in names
        )
        test = "; ".join(f"{d} {ours} / {paper}" for d, (ours, paper) in row["test"].items()) or "–"
        lines.append(
            f"<tr><th class='row'>{html.escape(row['experiment'])}</th>{cells}"
            f"<td>{html.escape(', '.join(map(str, row['seeds'])))}</td><td>{html.escape(test)}</td></tr>"
        )
    header = "".join(f"<th colspan='2' class='group'>{n}</th>" for n in names)
    sub = "<th class='ours'>ours</th><th class='paper'>paper</th>" * len(names)
    table = (
        (
            f"<div class='scroll'><table><caption>Each experiment's first run in this preset beside the "
            "paper's setting (the catalogue's, without this preset's settings); "
            "test images: this preset's / the real dataset's.</caption>"
            f"<thead><tr><th rowspan='2'>experiment</th>{header}<th rowspan='2'>seeds</th>"
            f"<th rowspan='2'>test images</th></tr><tr>{sub}</tr></thead><tbody>{''.join(lines)}</tbody>"
            f"</table></div>"
        )
        if lines
        else ""
    )
    return f"<details id='{html.escape(plan.name)}-provenance'><summary>Provenance</summary>{head}{table}</details>"
