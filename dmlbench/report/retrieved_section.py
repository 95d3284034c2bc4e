"""The retrieved-images figures of an experiment in the HTML report: each dataset's figure
(`retrieved/<dataset>.png`, `dmlbench.report.retrieved`) with a caption drawn from its record."""

from __future__ import annotations

from pathlib import Path

from dmlbench.config.retrieved_jobs import FOLDER
from dmlbench.core.io import read_json
from dmlbench.report.html_templates import Markup, render

ROLES = {"headline": "the paper's headline method", "baseline": "the baseline"}


def caption(record: dict) -> tuple[str, str]:
    """(lead, text): what the figure shows, in words: dataset, k, the queries, both methods and
    their counts beside each run's own Recall@1."""
    methods = record["methods"]
    n = len(methods[0]["queries"])
    names = " and ".join(f"{m['label']} ({m['method']}, {ROLES[m['role']]})" for m in methods)
    counts = ", ".join(f"{m['method']} {m['correct']}{_recall(m, n == 0)}" for n, m in enumerate(methods))
    text = (
        f"{n} fixed queries of distinct classes (drawn with seed {record['seed']} from the split's labels, the "
        f"same for both runs) and their top-{record['k']} gallery images under {names}, the seed-"
        f"{methods[0]['seed']} runs: {methods[0]['protocol']}, by cosine similarity. Green frame ✓: the query's "
        f"class; red ✗: another class. Of the {methods[0]['of']} images shown, of the query's class: {counts}."
    )
    if record.get("data_note"):
        text += f" {record['data_note'][0].upper()}{record['data_note'][1:]}."
    return f"Retrieved images, {record['dataset_label']} ({record['dataset']}).", text


def _recall(method: dict, first: bool) -> str:
    value = method.get("recall@1")
    if value is None:
        return ""
    return f" (the run's Recall@1 over every query: {100 * value:.1f} %)" if first else f" ({100 * value:.1f} %)"


def render_figures(folder: Path, rel: Path, anchor: str) -> Markup:
    """The experiment's figures (none: empty) by dataset name; `rel`: the folder as the page
    links it; `anchor`: the experiment's, before each figure's id."""
    records = sorted((folder / FOLDER).glob("*.json")) if (folder / FOLDER).is_dir() else []
    shown = []
    for path in records:
        record = read_json(path)
        if not path.with_suffix(".png").exists():
            continue
        shown.append(
            {
                "dataset": record["dataset"],
                "id": f"{anchor}-retrieved-{record['dataset']}",
                "figure": rel / FOLDER / path.with_suffix(".png").name,
                "record": rel / FOLDER / path.name,
                **dict(zip(("lead", "caption"), caption(record))),
                "fixture": bool(record.get("data_note")) and "fixture" in record["data_note"],
            }
        )
    return render("retrieved.html", figures=shown) if shown else Markup("")
