"""The HTML report of a preset (`reports/<preset>/index.html`) and the landing page `reports/index.html`."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pandas as pd

from dmlbench.core.io import atomic_path, json_text, read_json
from dmlbench.models import timm_trunks
from dmlbench.report import (
    certificate_section,
    contents,
    fair_section,
    knob_section,
    layout,
    ledger,
    markdown,
    provenance,
    references,
    retrieved_section,
    scorecard,
)
from dmlbench.report.aggregate import toy_note
from dmlbench.report.html_templates import Markup, render, url
from dmlbench.verdicts import certificate_text
from dmlbench.models.names import setting_label


def _shown(exp: dict) -> dict:
    """An experiment as its badge shows it: a figure the preset did not run says that the paper
    prints no numbers for it (nothing is shown)."""
    text = exp["status"] + (": the paper prints no numbers" if exp["status"] == contents.FIGURE_ONLY else "")
    return {**exp, "shown": text}


def _labels(plan, exp: dict) -> dict[str, str]:
    """Names of an experiment's methods (and sweep variants) as the catalogue gives them."""
    labels = {m: plan.methods[m].get("label", m) for m in exp["methods"]}
    for method in exp["methods"]:
        for variant, entry in (exp.get("sweep") or {}).items():
            labels[f"{method}@{variant}"] = f"{labels[method]} ({setting_label(variant, entry)})"
    return labels


def _caption(exp: dict, ran: bool, toy: bool) -> str:
    if not (exp.get("reported") or exp.get("quoted")):
        return (
            "Mean ± 95 % interval over the n seeds run (n in the cell), last epoch; 'not run': not trained by this "
            "preset; '·': not measured by this preset. The paper prints no numbers for this."
        )
    parts = [
        "This suite: mean ± 95 % interval (Student t) over the n seeds run, last epoch; paper: the paper's "
        "number as it prints it (– where it prints none; a row name's \"(ours)\" is the paper's "
        "authors')."
        if ran
        else "Not run in this preset: the paper's numbers alone."
    ]
    if ran:
        parts.append(
            "'not run': this preset does not train that row on that dataset; '·': not measured "
            "by this preset; (quoted): a row the paper quotes from the literature."
        )
    if ran and (exp.get("table") or {}).get("test_selected"):
        parts.append(
            "The paper reports each method at its best epoch on the test set: 'sel.' is this "
            "suite's test-selected epoch, which Δ and the verdict compare with the paper's number; "
            "'last' its last epoch, the honest number."
        )
    if ran and toy:
        parts.append(
            "Fixture data: this suite's numbers, differences and verdicts test the pipeline; they are "
            "not comparable with the paper's."
        )
    return " ".join(parts)


def _table_html(plan, key: str, folder: Path | None) -> str:
    """The experiment's table in the paper's layout, ours beside the paper's numbers."""
    exp = plan.experiments[key]
    grid = layout.table_layout(exp, _labels(plan, exp))
    summary = pd.read_csv(folder / "table.csv") if folder is not None and (folder / "table.csv").exists() else None
    caption = _caption(exp, summary is not None, plan.toy_data)
    if summary is not None:
        said = references.sentences(
            summary, [[d, m, n] for (d, m), n in plan.reference_map(key).items()], _labels(plan, exp)
        )
        if said:
            caption += (
                " Rows 'no training': the same evaluation of the embeddings before any training "
                "step (first seed's network at initialisation, its trunk's pooled features"
                + (", the raw pixels" if any("raw pixels" in s for s in said) else "")
                + "). "
                + " ".join(said)
            )
    ran = {run.variant for run in plan.runs(key)} if key in plan.experiment_ids else set()
    leakage = timm_trunks.overlap_note(
        ((entry.get("train") or {}).get("model") or {}).get("backbone")
        for variant, entry in (exp.get("sweep") or {}).items()
        if variant in ran
    )
    caption += f" {leakage}" if leakage else ""
    return layout.render(exp, grid, summary, caption)


def _summary_html(lines: list[str]) -> Markup:
    """The few Markdown forms summaries use: paragraphs and "- " bullet lists."""
    bullets = [line[2:] for line in lines if line.startswith("- ")]
    paragraphs = [line for line in lines if line.strip() and not line.startswith("- ")]
    return render("summary.html", paragraphs=paragraphs, bullets=bullets)


def _preset_page(plan, info: dict, preset_dir: Path, spent: pd.DataFrame) -> Markup:
    """Provenance, contents, the preflight's budget and the cost ledger, then per paper (a
    collapsible section) its certificate and its experiments' tables, figures and data links."""
    preset = info["preset"]
    papers = []
    for paper in info["papers"]:
        cert = certificate_section.read(preset_dir, paper["paper"])
        experiments = [_shown(exp) for exp in paper["experiments"]]
        papers.append(
            {
                **paper,
                "experiments": experiments,
                "certificate": certificate_section.render(cert, url(paper["paper"])) if cert is not None else "",
                "sections": [
                    _experiment_html(plan, exp, preset, preset_dir / exp["id"], preset_dir) for exp in experiments
                ],
            }
        )
    budget = preset_dir / "preflight" / "budget.md"
    return render(
        "preset.html",
        title=f"dmlbench report: {plan.name}",
        preset=preset,
        provenance=provenance.panel(plan, preset_dir),
        toy_note=toy_note(own_datasets(plan)) if info["toy_data"] else None,
        scorecard=scorecard.table(info["scorecard"]),
        papers=papers,
        budget=_budget_html(budget, preset, preset_dir) if budget.exists() else "",
        ledger=ledger.html_section(spent, preset),
    )


def own_datasets(plan) -> list[str]:
    """The plan's datasets given as a CSV of the user's (real images, even under a fixture preset)."""
    from dmlbench.data.datasets import DATASETS

    return [name for name in plan.datasets if DATASETS.get(name).csv]


def _budget_html(budget: Path, preset: str, page_dir: Path) -> Markup:
    """The preflight's compute budget (`python -m dmlbench preflight`), as it wrote it."""
    lines = budget.read_text().splitlines()[1:]
    return render(
        "budget.html",
        preset=preset,
        lines=[line for line in lines if line.strip() and not line.startswith("|")],
        rows=[
            [c.strip("*") for c in markdown.cells(line)]
            for line in lines
            if line.startswith("|") and not line.startswith("|---")
        ],
        probes=os.path.relpath(budget.parent / "preflight.md", page_dir),
    )


def _experiment_html(plan, exp: dict, preset: str, folder: Path, page_dir: Path) -> Markup:
    """The experiment's heading, then its table or section, its figures and data files, or why
    it has none."""
    key = exp["id"]
    why, content, figures, data, retrieved = None, "", [], None, ""
    if exp["status"] == contents.FIGURE_ONLY:
        why = "figure only"
    elif exp["status"] == contents.NOT_RUN:
        why = "suite's own"
    elif exp["status"] == "quoted only":
        if plan.is_fair(key):
            why = "fair, not run"
        elif plan.is_analysis(key):
            why = "analysis, not run"
        else:
            content = _table_html(plan, key, None)
    rel = Path(os.path.relpath(folder.resolve(), page_dir.resolve()))
    if exp["status"] not in (contents.FIGURE_ONLY, contents.NOT_RUN, "quoted only"):
        if plan.is_fair(key):
            if (folder / "fair_table.csv").exists():
                content = fair_section.render(folder, plan, key, lambda name: url(rel / name))
        elif plan.is_knobs(key):
            if (folder / "attribution.md").exists():
                content = knob_section.render(folder, lambda name: url(rel / name))
        elif not plan.is_analysis(key):
            content = _table_html(plan, key, folder)
        elif (folder / "summary.md").exists():
            content = _summary_html((folder / "summary.md").read_text().splitlines()[1:])
        figures = [] if plan.is_fair(key) or plan.is_knobs(key) else exp["figures"]
        retrieved = retrieved_section.render_figures(folder, rel, f"{preset}-{key}")
        if folder.exists():
            data = sorted(p.name for p in folder.iterdir() if p.suffix in (".csv", ".md"))
    return render(
        "experiment.html",
        exp=exp,
        anchor=f"{preset}-{key}",
        why=why,
        content=content,
        figures=figures,
        retrieved=retrieved,
        data=data,
        folder=str(rel),
    )


def write(plan, output: Path) -> None:
    """Write the preset's report and `contents.json` from its experiment folders, then the
    landing page. Both files are written in full before either replaces its old self, the page
    first and the contents last: a failed write (a full disk) leaves the old pair, or neither."""
    preset_dir = output.parent
    info = contents.contents(plan, preset_dir)
    certificates = [certificate_section.read(preset_dir, paper["paper"]) for paper in info["papers"]]
    info["certificates"] = [certificate_text.headline(c) for c in certificates if c is not None]
    info["scorecard"] = [scorecard.row(c) for c in certificates if c is not None]
    spent = ledger.collect(
        plan, preset_dir.parent.parent / "results" / plan.name, preset_dir / "preflight" / "budget.csv"
    )
    info["cost"] = ledger.totals(spent) if not spent.empty else None
    info["knobs"] = [
        line
        for key in plan.experiment_ids
        if plan.is_knobs(key) and (preset_dir / key / "landing.json").exists()
        for line in read_json(preset_dir / key / "landing.json")["lines"]
    ]
    page = _preset_page(plan, info, preset_dir, spent)
    with atomic_path(preset_dir / "contents.json") as contents_tmp, atomic_path(output) as page_tmp:
        contents_tmp.write_text(json_text(info))
        page_tmp.write_text(page)
    write_landing(preset_dir.parent)


def write_landing(reports_dir: Path) -> None:
    """`reports/index.html`: every preset's report present, with the count of each status."""
    reports = []
    for folder in sorted(p.parent for p in reports_dir.glob("*/contents.json")):
        info = read_json(folder / "contents.json")
        statuses = Counter(e["status"] for p in info.get("papers", []) for e in p.get("experiments", []))
        lines = info.get("certificates", []) + info.get("knobs", [])
        reports.append(
            {
                "name": folder.name,
                "toy_data": bool(info.get("toy_data")),
                "counts": [(str(s), n) for s, n in sorted(statuses.items())],
                "scorecard": scorecard.table(info.get("scorecard") or []),
                "lines": lines + ([ledger.headline(info["cost"])] if info.get("cost") else []),
            }
        )
    page = render(
        "landing.html", title="dmlbench reports", reports=reports, benchmarks=(reports_dir / "benchmarks.md").exists()
    )
    with atomic_path(reports_dir / "index.html") as tmp:
        tmp.write_text(page)
