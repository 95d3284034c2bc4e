"""Free disk against the missing datasets, the stores and the results; stale temporary files."""

from __future__ import annotations

import shutil
from pathlib import Path

from dmlbench.data import datasets, store
from dmlbench.doctor.checks import ACTION, OK, WEIGHTS_GB, Check


def store_gb(plan, dataset: str) -> float:
    """GB of the decoded-image stores of `dataset`: one per input resize its runs use."""
    if not plan.preset["data"].get("store"):
        return 0.0
    rows = sum(datasets.get(dataset).expected.images.values())
    sides = {plan.resolve(run)["input"]["resize"] for run in plan.all_runs() if run.dataset == dataset}
    return round(sum(store.size_bytes(rows, side) for side in sides) / 1e9, 1)


def disk_check(plan, checks: list[Check], free_bytes: int | None = None) -> Check:
    """Free space at the data root against the datasets (and weights) still to fetch."""
    missing = [
        c.item
        for c in checks
        if c.area == "dataset"
        and not c.detail.startswith("prepared")
        and c.detail != "made on the machine (fixture or shipped)"
    ]
    need = {name: datasets.get(name).disk_gb + store_gb(plan, name) for name in missing}
    weights_gb = WEIGHTS_GB * sum(1 for c in checks if c.area == "weights" and not c.detail.startswith("cached"))
    total = sum(need.values()) + weights_gb
    root = Path(plan.preset["data"]["root"])
    probe_at = next((p for p in [root, *root.absolute().parents] if p.exists()), Path("."))
    free = shutil.disk_usage(probe_at).free if free_bytes is None else free_bytes
    listed = ", ".join(f"{k} {v:g} GB" for k, v in need.items()) or "nothing to fetch"
    detail = (
        f"{free / 1e9:.1f} GB free at {probe_at}; the plan still needs about {total:.1f} GB "
        f"({listed}{f', weights {weights_gb:.1f} GB' if weights_gb else ''}; archives + "
        f"extracted images + cache{' + decoded-image stores' if plan.preset['data'].get('store') else ''})"
    )
    return Check("disk", str(probe_at), OK if free >= total * 1e9 else ACTION, detail)


def results_disk_check(plan, free_bytes: int | None = None) -> Check:
    """Free space where `results/` lives against what the plan's finished trainings keep
    (`dmlbench.preflight.disk`)."""
    from dmlbench.preflight import disk

    need = disk.plan_need(plan).sort_values("gb", ascending=False)
    total = float(need["gb"].sum())
    folder = Path("results")
    probe_at = next((p for p in [folder, *folder.absolute().parents] if p.exists()), Path("."))
    free = shutil.disk_usage(probe_at).free if free_bytes is None else free_bytes
    largest = ", ".join(f"{row.experiment} {row.gb:.1f} GB" for row in need.head(3).itertuples())
    detail = (
        f"{free / 1e9:.1f} GB free at {probe_at}; the results of the plan's {int(need['trainings'].sum())} "
        f"trainings need about {total:.1f} GB (largest: {largest}; models, test embeddings and "
        f"records; keep.checkpoint and keep.fold_model add more)"
    )
    return Check("disk", f"results/{plan.name}", OK if free >= total * 1e9 else ACTION, detail)


def stale_check(plan) -> Check | None:
    """Half-written outputs of killed steps (a store build killed with -9, say) under the data
    root, down to the store folders: each counts against the free space until removed."""
    from dmlbench.core.io import stale_temporaries

    root = Path(plan.preset["data"]["root"])
    folders = [root] + [p for depth in ("*", "*/*", "*/*/*") for p in root.glob(depth) if p.is_dir()]
    stale = [t for folder in folders for t in stale_temporaries(folder)]
    if not stale:
        return None
    size = sum(f.stat().st_size for t in stale for f in ([t] if t.is_file() else t.rglob("*")) if f.is_file())
    return Check(
        "disk",
        "stale temporaries",
        ACTION,
        f"{len(stale)} left by killed steps ({size / 2**30:.2f} GiB): "
        + ", ".join(str(t) for t in stale[:5])
        + "; the next run of their step removes them, or delete them now",
    )
