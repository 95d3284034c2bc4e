"""The retrieved-images step (`dmlbench retrieved`): for one dataset of an experiment, the top-k
gallery images of a few fixed queries under two finished runs (the paper's headline method and
the baseline), as a JSON record and a figure.

Each run's `model.pt` is read (never written: nothing here trains or changes a run), its
settings' fingerprint checked against the plan's, and the split the evaluation scores is
embedded as the evaluation embeds it: the test split, each query against all other images
(itself left out); In-Shop's queries against its gallery; VehicleID's small test list, all
against all. The queries are drawn from the split's labels (`neighbours.choose_queries`), so both
runs show the same ones (checked)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import torch

from dmlbench import models
from dmlbench.core import environment
from dmlbench.core.errors import DmlbenchError
from dmlbench.core.io import read_json, write_json
from dmlbench.data import folds, manifest
from dmlbench.evaluation import final_metrics, model_eval, neighbours
from dmlbench.plots import retrieved as figure
from dmlbench.run_config import RunConfig
from dmlbench.training import run_folder


def splits_of(table) -> tuple[str, str]:
    """(query split, gallery split) of the split the evaluation scores; equal: self-retrieval."""
    present = set(table["split"])
    if "test_small" in present:
        return "test_small", "test_small"
    if "query" in present:
        return "query", "gallery"
    return "test", "test"


def load(entry: dict):
    """(model, settings, model.pt's sha256) of a finished run; a run trained with other settings
    than those the plan accepts (`entry["fingerprints"]`) is refused."""
    path = Path(entry["run_dir"]) / "model.pt"
    if not path.exists():
        raise DmlbenchError(f"{path} does not exist: train the run first")
    state = torch.load(path, map_location="cpu", weights_only=True)
    found = run_folder.fingerprint(state["config"])
    accepted = entry.get("fingerprints") or []
    if accepted and found not in accepted:
        raise DmlbenchError(
            f"{path} was trained with other settings than the plan's (fingerprint {found[:12]}, planned "
            f"{' or '.join(f[:12] for f in accepted)}): train it again "
            f"(`snakemake --forcerun train --until {entry['run_dir']}/metrics.json`)"
        )
    cfg = RunConfig.from_dict(state["config"], f"{path}: config")
    model = models.build(dataclasses.replace(cfg.model, pretrained=False))
    model.load_state_dict(state["model"])
    return model, cfg, found, final_metrics.file_sha256(path)


def retrieve(model, cfg: RunConfig, k: int, n_queries: int, seed: int) -> dict:
    """The queries (paths, labels) and each one's top-k neighbours (path, label, similarity,
    whether of the query's class) under `model`."""
    table = folds.evaluation_view(manifest.read(Path(cfg.data["manifest"])), cfg.data)
    base = Path(cfg.data["manifest"]).parent
    device = environment.pick_device(cfg.device)
    model = model.to(device)
    query_split, gallery_split = splits_of(table)
    rows = {split: table[table["split"] == split] for split in {query_split, gallery_split}}
    embedded = {
        split: model_eval.embed(model, model_eval.split_loader(table, base, split, cfg, device), device)[0]
        for split in rows
    }
    queries, gallery = rows[query_split], rows[gallery_split]
    chosen = neighbours.choose_queries(queries["label"].to_numpy(), n_queries, seed)
    own = chosen if query_split == gallery_split else None
    found, similarity = neighbours.top_k(embedded[query_split][chosen], embedded[gallery_split], k, own)
    paths, labels = gallery["path"].astype(str).tolist(), gallery["label"].tolist()
    out = []
    for q, items, sims in zip(chosen, found, similarity):
        label = queries["label"].tolist()[q]
        out.append(
            {
                "path": str(queries["path"].iloc[q]),
                "label": label,
                "neighbours": [
                    {
                        "path": paths[i],
                        "label": labels[i],
                        "similarity": round(float(s), 4),
                        "correct": labels[i] == label,
                    }
                    for i, s in zip(items, sims)
                ],
            }
        )
    protocol = {
        "test": "test split, each query against all other test images",
        "query": "query split against the gallery split",
        "test_small": "small test list, each query against all other images of it",
    }[query_split]
    return {"images": str(base), "split": query_split, "protocol": protocol, "queries": out}


def _recall_at_1(run_dir: Path, split: str) -> float | None:
    """The run's own Recall@1 over every query (its `metrics.json`; VehicleID: the small list's)."""
    try:
        metrics = read_json(run_dir / "metrics.json")["metrics"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return metrics.get("small_recall@1" if split == "test_small" else "recall@1")


@torch.no_grad()
def run(spec: dict, json_path: Path, figure_path: Path) -> dict:
    """Write the record (`json_path`) and the figure (`figure_path`) of `spec`'s runs."""
    shown = []
    for entry in spec["runs"]:
        model, cfg, fingerprint, digest = load(entry)
        environment.set_tf32(cfg.performance.tf32)
        result = retrieve(model, cfg, spec["k"], spec["queries"], spec["seed"])
        hits = sum(n["correct"] for q in result["queries"] for n in q["neighbours"])
        total = sum(len(q["neighbours"]) for q in result["queries"])
        recall = _recall_at_1(Path(entry["run_dir"]), result["split"])
        shown.append(
            {**entry, "fingerprint": fingerprint, "model_sha256": digest, "correct": hits, "of": total, **result}
            | {"recall@1": recall}
        )
    asked = [[q["path"] for q in part["queries"]] for part in shown]
    if any(paths != asked[0] for paths in asked):
        folders = ", ".join(entry["run_dir"] for entry in spec["runs"])
        raise DmlbenchError(f"{folders}: the runs score different images, so no query is the same for both")
    record = {key: spec[key] for key in ("experiment", "dataset", "dataset_label", "k", "seed", "data_note")}
    record["methods"] = shown
    write_json(json_path, record)
    figure.draw(record, figure_path)
    said = "; ".join(f"{m['method']} {m['correct']} of {m['of']} correct" for m in shown)
    print(f"{figure_path}: {said}", file=sys.stderr)
    return record
