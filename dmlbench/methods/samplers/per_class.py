"""Samplers that cut images into batches without regard to super-categories: `m_per_class`
(classes × images per class, most papers) and `shuffle` (a plain permutation, proxy losses)."""

from __future__ import annotations

import numpy as np
import torch

from dmlbench.core.errors import ConfigError
from dmlbench.methods.samplers.base import SAMPLERS, BatchSampler


@SAMPLERS.register("m_per_class")
class MPerClassBatches(BatchSampler):
    """Batches of `batch_size / per_class` distinct classes × `per_class` images each.

    Classes are drawn uniformly without replacement within a batch, images of a class without
    replacement. A class with fewer than `per_class` images (common in SOP and In-Shop):
    - `small_classes: fill` (default): it contributes all its images, and further classes fill
      the batch up to `batch_size` (the last one may contribute fewer images than `per_class`),
      so a batch never holds the same image twice;
    - `small_classes: repeat`: it is topped up with repeats drawn with replacement (what the ms
      authors' released sampler does); the same image then appears twice, under two augmentations.
    With classes of at least `per_class` images both give the same batches.
    One epoch = `batches` batches (default: number of images // batch size).
    """

    about = {
        "labels": "training class label of each image, filled in by the training; the suite",
        "batch_size": "images per batch (batch.size); the suite",
        "per_class": "images per class in a batch (batch.per_class, the ms paper's K); ms paper section 6",
        "generator": "torch generator that makes the batches deterministic, filled in by the training; the suite",
        "batches": "batches per epoch (default images // batch size); the suite's choice",
        "small_classes": "a class short of per_class: fill (more classes) or repeat (ms code); the suite's choice",
    }

    def __init__(
        self,
        labels,
        batch_size: int,
        per_class: int,
        generator: torch.Generator,
        batches: int | None = None,
        small_classes: str = "fill",
    ):
        if batch_size % per_class:
            raise ConfigError(f"batch.size {batch_size} is not a multiple of batch.per_class {per_class}")
        if small_classes not in ("fill", "repeat"):
            raise ConfigError(f"batch.small_classes must be 'fill' or 'repeat', not {small_classes!r}")
        labels = np.asarray(labels)
        classes, inverse = np.unique(labels, return_inverse=True)
        self.members = [np.flatnonzero(inverse == c) for c in range(len(classes))]
        self.classes_per_batch = batch_size // per_class
        if self.classes_per_batch > len(classes):
            raise ConfigError(
                f"a batch of {batch_size} with {per_class} images per class needs "
                f"{self.classes_per_batch} classes but the training split has {len(classes)}: a batch of at most "
                f"{len(classes) * per_class} (the workflow: per_dataset: {{<dataset>: {{batch: {{size: …}}}}}})"
            )
        capacity = sum(min(per_class, len(m)) for m in self.members)
        if small_classes == "fill" and capacity < batch_size:
            raise ConfigError(
                f"a batch of {batch_size} without repeated images needs {batch_size} images at "
                f"{per_class} per class; the training split offers {capacity}: use a smaller "
                f"batch or batch.small_classes: repeat"
            )
        self.per_class, self.generator, self.small_classes = per_class, generator, small_classes
        self.batch_size = batch_size
        self.batches = batches or max(1, len(labels) // batch_size)

    def __len__(self) -> int:
        return self.batches

    def __iter__(self):
        for _ in range(self.batches):
            classes = torch.randperm(len(self.members), generator=self.generator).tolist()
            if self.small_classes == "repeat":
                classes = classes[: self.classes_per_batch]
            batch = []
            for c in classes:
                if len(batch) == self.batch_size:
                    break
                pool = self.members[c]
                order = torch.randperm(len(pool), generator=self.generator).numpy()
                if len(pool) < self.per_class and self.small_classes == "repeat":
                    extra = torch.randint(len(pool), (self.per_class - len(pool),), generator=self.generator).numpy()
                    order = np.concatenate([order, extra])
                room = self.batch_size - len(batch)
                batch.extend(pool[order[: min(self.per_class, room)]].tolist())
            yield batch


@SAMPLERS.register("shuffle")
class ShuffledBatches(BatchSampler):
    """Plain shuffling: a random permutation cut into batches of `batch_size` (last partial dropped)."""

    about = {
        "labels": "training class label of each image, filled in by the training; the suite",
        "batch_size": "images per batch (batch.size); the suite",
        "generator": "torch generator that makes the batches deterministic, filled in by the training; the suite",
        "batches": "batches per epoch (default images // batch size); the suite's choice",
    }

    def __init__(self, labels, batch_size: int, generator: torch.Generator, batches: int | None = None):
        self.n, self.batch_size, self.generator = len(labels), batch_size, generator
        self.batches = batches or max(1, self.n // batch_size)

    def __len__(self) -> int:
        return self.batches

    def __iter__(self):
        produced = 0
        while produced < self.batches:
            order = torch.randperm(self.n, generator=self.generator).tolist()
            for start in range(0, self.n - self.batch_size + 1, self.batch_size):
                if produced == self.batches:
                    return
                yield order[start : start + self.batch_size]
                produced += 1
