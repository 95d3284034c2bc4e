"""What a run records about its triplets besides its metrics (config key `record`).

- Triplet scatter (ephn.f6): after the listed epochs (0 = before training), every training image's
  similarity to its closest positive and its closest negative over the whole training set, from
  the run's own embeddings → `scatter/after_epoch<E>.csv` (index, label, s_ap, s_an).
- Probes (ephn.f3): after the listed epochs, a copy of the model takes `steps` SGD steps at the
  probe's learning rate (paper: 1e-6, no momentum) with the run's method; for every mined triplet
  the similarities before and after the step are kept → `moves/after_epoch<E>.csv` (step,
  s_ap, s_an, s_ap_after, s_an_after). The run itself is not changed by its probes.
Files already present are kept, so a resumed run does not record twice.
"""

from __future__ import annotations

import copy
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from dmlbench.data import batches, draws
from dmlbench.core.io import atomic_path
from dmlbench.methods import samplers
from dmlbench.run_config import RunConfig

CHUNK = 1024  # anchor rows per similarity block


def closest_similarities(embeddings: torch.Tensor, labels: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Per image: max cosine similarity to another image of its class, and to any other class
    (NaN when it has none)."""
    x = F.normalize(embeddings.float(), dim=1)
    s_ap, s_an = [], []
    for start in range(0, len(x), CHUNK):
        rows = slice(start, start + CHUNK)
        sim = x[rows] @ x.T
        same = labels[rows, None] == labels[None, :]
        same_other = same.clone()
        diagonal = torch.arange(len(sim), device=x.device)
        same_other[diagonal, diagonal + start] = False
        s_ap.append(sim.masked_fill(~same_other, float("-inf")).max(dim=1).values)
        s_an.append(sim.masked_fill(same, float("-inf")).max(dim=1).values)
    ap, an = (torch.cat(parts).cpu().numpy() for parts in (s_ap, s_an))
    ap[np.isneginf(ap)], an[np.isneginf(an)] = np.nan, np.nan
    return ap, an


def write_scatter(path: Path, embeddings: torch.Tensor, labels: torch.Tensor) -> None:
    s_ap, s_an = closest_similarities(embeddings, labels)
    frame = pd.DataFrame({"index": np.arange(len(s_ap)), "label": labels.cpu().numpy(), "s_ap": s_ap, "s_an": s_an})
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)


@contextmanager
def buffers_kept(model: torch.nn.Module):
    """Restore every buffer (BatchNorm running statistics) on exit: a measuring forward pass in
    training mode then leaves the model as it was."""
    saved = {name: buffer.clone() for name, buffer in model.named_buffers()}
    try:
        yield
    finally:
        with torch.no_grad():
            for name, buffer in model.named_buffers():
                buffer.copy_(saved[name])


def probe(model, criterion, data, cfg: RunConfig, device, generator: torch.Generator, epoch: int) -> pd.DataFrame:
    """`record.probe.steps` plain SGD steps of a copy of `model`; each mined triplet's
    similarities before and after its step."""
    settings = cfg.record.probe
    model, criterion = copy.deepcopy(model), copy.deepcopy(criterion)
    model.train()
    optimizer = torch.optim.SGD(list(model.parameters()) + list(criterion.parameters()), lr=settings.lr, momentum=0.0)
    sampler = samplers.from_config(cfg, data.labels, data.supers, generator, settings.steps)
    keyed = draws.KeyedBatches(sampler, cfg.seed, draws.probe_stream(epoch))
    loader = batches.loader(data, batch_sampler=keyed, generator=generator, num_workers=cfg.loader.workers)
    rows = []
    for step, loaded in enumerate(loader, 1):
        images, labels = data.device_batch(loaded, device)
        labels = labels.to(device)
        embeddings = model(images)
        a, p, n = criterion.triplets(embeddings.detach(), labels)
        before = F.normalize(embeddings.detach(), dim=1)
        loss = criterion(embeddings, labels)
        optimizer.zero_grad(set_to_none=True)
        if loss.grad_fn is not None:
            loss.backward()
            optimizer.step()
        with torch.no_grad(), buffers_kept(model):
            after = F.normalize(model(images), dim=1)
        rows.append(
            pd.DataFrame(
                {
                    "step": step,
                    "s_ap": (before[a] * before[p]).sum(1).cpu().numpy(),
                    "s_an": (before[a] * before[n]).sum(1).cpu().numpy(),
                    "s_ap_after": (after[a] * after[p]).sum(1).cpu().numpy(),
                    "s_an_after": (after[a] * after[n]).sum(1).cpu().numpy(),
                }
            )
        )
    columns = ["step", "s_ap", "s_an", "s_ap_after", "s_an_after"]
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=columns)


def after_epoch(epoch: int, run_dir: Path, cfg: RunConfig, model, criterion, data, embed_train, device, log) -> None:
    """Record what `cfg.record` asks for after `epoch` finished epochs (0: before training).
    `embed_train()` returns the training split's embeddings and labels (test-time transform)."""
    record = cfg.record
    scatter = run_dir / "scatter" / f"after_epoch{epoch}.csv"
    if epoch in record.scatter_epochs and not scatter.exists():
        embeddings, labels = embed_train()
        write_scatter(scatter, torch.as_tensor(embeddings), torch.as_tensor(labels))
        log(f"recorded the triplet scatter after epoch {epoch}")
    moves = run_dir / "moves" / f"after_epoch{epoch}.csv"
    if epoch in record.probe.epochs and not moves.exists():
        generator = torch.Generator().manual_seed(cfg.seed * 1_000_003 + 500_009 + epoch)
        frame = probe(model, criterion, data, cfg, device, generator, epoch)
        moves.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(moves) as tmp:
            frame.to_csv(tmp, index=False)
        log(f"probe after epoch {epoch}: {len(frame)} triplet moves recorded")
