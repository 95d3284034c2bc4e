"""A model on a manifest's splits: the data loaders, the embeddings of a split, and the test
metrics (query vs gallery for In-Shop, VehicleID's three test lists, self-retrieval otherwise).
Used by training (per-epoch evaluation, recordings) and by the evaluation step."""

from __future__ import annotations

import numpy as np
import torch

from dmlbench.data import batches
from dmlbench.evaluation.metrics import retrieval_metrics, vehicleid_metrics
from dmlbench.core.progress import Bar
from dmlbench.run_config import RunConfig


def loader_options(cfg: RunConfig, device) -> dict:
    """DataLoader settings shared by training and evaluation."""
    workers = cfg.loader.workers
    return {
        "num_workers": workers,
        "pin_memory": cfg.loader.pin_memory and device.type == "cuda",
        "persistent_workers": cfg.loader.persistent_workers and workers > 0,
    }


def split_loader(table, base, split: str, cfg: RunConfig, device, kept: dict | None = None):
    """The evaluation loader of `split` (centre crops, in order). With `kept` (a training's own
    dict) the loader is made once and reused at every evaluation, its workers kept alive between
    them: nothing in it is random, so its batches are the same each time."""
    if kept is not None and split in kept:
        return kept[split]
    data = batches.split_images(table, table.index[table["split"] == split], base, cfg, train=False)
    options = loader_options(cfg, device)
    if kept is not None:
        options["persistent_workers"] = options["num_workers"] > 0
    loader = batches.loader(data, batch_size=cfg.eval.batch_size, shuffle=False, **options)
    if kept is not None:
        kept[split] = loader
    return loader


LARGE = 10_000  # images from which an embedding shows a progress bar on a terminal


@torch.no_grad()
def embed(model, loader, device) -> tuple[np.ndarray, np.ndarray]:
    """Embeddings of every image of `loader`, L2-normalised (retrieval and clustering compare
    directions, also for a model trained on unnormalised embeddings), and their labels."""
    model.eval()
    out, labels = [], []
    with Bar(len(loader.dataset), "embedding", at_least=LARGE) as bar:
        for loaded in loader:
            batch, y = loader.dataset.device_batch(loaded, device)
            embeddings = model(batch).float()
            if not getattr(model, "normalize", True):
                embeddings = torch.nn.functional.normalize(embeddings, dim=1)
            out.append(embeddings.cpu())
            labels.append(y)
            bar.update(len(y))
    return torch.cat(out).numpy(), torch.cat(labels).numpy()


def evaluate_model(
    model, table, base, cfg: RunConfig, device, clustering: bool = True, kept: dict | None = None
) -> dict:
    """Metrics of `model` on the test split (query vs gallery where the manifest has them; each of
    VehicleID's three test lists, keys prefixed `small_`, `medium_`, `large_`). `kept`: the
    loaders reused between a training's evaluations (`split_loader`)."""
    if (table["split"] == "test_small").any():
        out = {}
        for size in ("small", "medium", "large"):
            test, labels = embed(model, split_loader(table, base, f"test_{size}", cfg, device, kept), device)
            metrics = vehicleid_metrics(
                test, labels, list(cfg.eval.ks), cfg.eval.vehicleid_protocol, clustering, cfg.eval.kmeans_restarts
            )
            out.update({f"{size}_{k}": v for k, v in metrics.items()})
        return out
    if (table["split"] == "query").any():
        gallery, gallery_labels = embed(model, split_loader(table, base, "gallery", cfg, device, kept), device)
        queries, query_labels = embed(model, split_loader(table, base, "query", cfg, device, kept), device)
        return retrieval_metrics(
            gallery,
            gallery_labels,
            list(cfg.eval.ks),
            queries,
            query_labels,
            clustering=clustering,
            kmeans_restarts=cfg.eval.kmeans_restarts,
        )
    test, labels = embed(model, split_loader(table, base, "test", cfg, device, kept), device)
    return retrieval_metrics(
        test, labels, list(cfg.eval.ks), clustering=clustering, kmeans_restarts=cfg.eval.kmeans_restarts
    )
