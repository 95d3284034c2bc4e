"""The fastap supplement's samplers (section A), which keep every sampled class whole ("a
minibatch will include all images from a class once that class gets sampled") and build batches
from super-categories: `random`, `category_pairs`, `vehicleid`, and `hard`, which picks
category_pairs, or vehicleid on a dataset with unlabelled vehicles."""

from __future__ import annotations

import itertools

import numpy as np
import torch

from dmlbench.core.errors import ConfigError
from dmlbench.methods.samplers.base import SAMPLERS, BatchSampler


class _WholeClasses(BatchSampler):
    """Shared part of the fastap samplers: classes grouped by super-category, and filling a
    number of places with whole classes drawn in random order (the last one cut to fit)."""

    def __init__(self, labels, supers, generator: torch.Generator):
        labels = np.asarray(labels)
        classes, inverse = np.unique(labels, return_inverse=True)
        self.members = [np.flatnonzero(inverse == c) for c in range(len(classes))]
        supers = np.asarray(supers if supers is not None else [""] * len(labels), dtype=object)
        self.classes_of: dict[str, list[int]] = {}
        for c, members in enumerate(self.members):
            self.classes_of.setdefault(str(supers[members[0]]), []).append(c)
        self.generator = generator

    def _permutation(self, n: int) -> list[int]:
        return torch.randperm(n, generator=self.generator).tolist()

    def fill(self, classes: list[int], places: int) -> list[int]:
        """`places` images of whole classes from `classes`, drawn in random order."""
        out: list[int] = []
        for position in self._permutation(len(classes)):
            if len(out) >= places:
                break
            members = self.members[classes[position]]
            out.extend(members[self._permutation(len(members))][: places - len(out)].tolist())
        return out


@SAMPLERS.register("random")
class RandomClassBatches(_WholeClasses):
    """fastap "random": classes drawn from the whole training set, each with all its images,
    until the batch has `batch_size` images. One epoch = images // batch size batches."""

    about = {
        "labels": "training class label of each image, filled in by the training; the suite",
        "batch_size": "minibatch size M (batch.size); fastap supplement section A",
        "generator": "torch generator that makes the batches deterministic, filled in by the training; the suite",
        "batches": "batches per epoch (default images // batch size); the suite's choice",
    }

    def __init__(self, labels, batch_size: int, generator: torch.Generator, batches: int | None = None):
        super().__init__(labels, None, generator)
        if len(labels) < batch_size:
            raise ConfigError(f"a batch of {batch_size} needs more images than the {len(labels)} of the training split")
        self.batch_size = batch_size
        self.batches = batches or max(1, len(labels) // batch_size)
        self.all_classes = list(range(len(self.members)))

    def __len__(self) -> int:
        return self.batches

    def __iter__(self):
        for _ in range(self.batches):
            yield self.fill(self.all_classes, self.batch_size)


@SAMPLERS.register("category_pairs")
class CategoryPairBatches(_WholeClasses):
    """fastap "hard": two super-categories per batch, batch_size/2 images of whole classes from
    each. One epoch visits every pair of distinct categories `per_pair` times (sop: 66 × 5 = 330
    batches, inshop: 253 × 2 = 506), in random order; `batches` cuts an epoch short."""

    about = {
        "labels": "training class label of each image, filled in by the training; the suite",
        "batch_size": "minibatch size M, M/2 from each category (batch.size); fastap supplement section A",
        "generator": "torch generator that makes the batches deterministic, filled in by the training; the suite",
        "supers": "super-category of each image, filled in by the training; fastap supplement section A",
        "per_pair": "minibatches per category pair per epoch (sop 5, inshop 2); fastap supplement section A",
        "batches": "cuts an epoch short (default every category pair per_pair times); the suite's choice",
    }

    def __init__(
        self,
        labels,
        batch_size: int,
        generator: torch.Generator,
        supers=None,
        per_pair: int = 5,
        batches: int | None = None,
    ):
        super().__init__(labels, supers, generator)
        self.classes_of.pop("", None)
        if batch_size % 2:
            raise ConfigError(f"batch.size {batch_size} must be even: half comes from each category")
        if len(self.classes_of) < 2:
            raise ConfigError(
                "category_pairs needs at least two super-categories in the manifest's "
                "`super` column (sop, inshop, vehicleid)"
            )
        small = [k for k, c in self.classes_of.items() if sum(len(self.members[i]) for i in c) < batch_size // 2]
        if small:
            raise ConfigError(
                f"categories {small[:5]} have fewer than batch.size/2 = {batch_size // 2} images: use a smaller batch"
            )
        self.half = batch_size // 2
        self.pairs = list(itertools.combinations(sorted(self.classes_of), 2)) * per_pair
        self.batches = min(batches, len(self.pairs)) if batches else len(self.pairs)

    def __len__(self) -> int:
        return self.batches

    def __iter__(self):
        for index in self._permutation(len(self.pairs))[: self.batches]:
            first, second = self.pairs[index]
            yield self.fill(self.classes_of[first], self.half) + self.fill(self.classes_of[second], self.half)


@SAMPLERS.register("vehicleid")
class VehicleIDBatches(_WholeClasses):
    """fastap, PKU VehicleID: batch_size/2 images of whole vehicles of one labelled model, and
    batch_size/2 of vehicles without a model label (super-category "none"). One epoch =
    Σ_c 2 N_c / batch_size batches (N_c images of model c; at least one per model), in random order."""

    about = {
        "labels": "training class label of each image, filled in by the training; the suite",
        "batch_size": "minibatch size M, M/2 from one vehicle model (batch.size); fastap supplement section A",
        "generator": "torch generator that makes the batches deterministic, filled in by the training; the suite",
        "supers": "super-category of each image, filled in by the training; fastap supplement section A",
        "batches": "cuts an epoch short (default Σ_c 2 N_c / M batches); the suite's choice",
    }

    UNLABELLED = "none"

    def __init__(self, labels, batch_size: int, generator: torch.Generator, supers=None, batches: int | None = None):
        super().__init__(labels, supers, generator)
        if self.UNLABELLED not in self.classes_of:
            raise ConfigError("the vehicleid sampler needs vehicles without a model label (super 'none')")
        self.unlabelled = self.classes_of.pop(self.UNLABELLED)
        self.half = batch_size // 2
        self.models = [
            m for m in sorted(self.classes_of) for _ in range(max(1, round(2 * self._images(m) / batch_size)))
        ]
        self.batches = min(batches, len(self.models)) if batches else len(self.models)

    def _images(self, model: str) -> int:
        return sum(len(self.members[c]) for c in self.classes_of[model])

    def __len__(self) -> int:
        return self.batches

    def __iter__(self):
        for index in self._permutation(len(self.models))[: self.batches]:
            yield self.fill(self.classes_of[self.models[index]], self.half) + self.fill(self.unlabelled, self.half)


@SAMPLERS.register("hard")
def hard_batches(
    labels, batch_size: int, generator: torch.Generator, supers=None, per_pair: int = 5, batches: int | None = None
):
    """fastap's "hard" strategy for the dataset at hand: category pairs, or, where vehicles
    without a model label exist (VehicleID), a labelled model + unlabelled vehicles."""
    if supers is not None and VehicleIDBatches.UNLABELLED in set(supers):
        return VehicleIDBatches(labels, batch_size, generator, supers, batches)
    return CategoryPairBatches(labels, batch_size, generator, supers, per_pair, batches)


hard_batches.about = {  # what it hands on to category_pairs (or the VehicleID batches)
    "labels": "training class label of each image, filled in by the training; the suite",
    "batch_size": "minibatch size M, M/2 from each category (batch.size); fastap supplement section A",
    "generator": "torch generator that makes the batches deterministic, filled in by the training; the suite",
    "supers": "super-category of each image, filled in by the training; fastap supplement section A",
    "per_pair": "minibatches per category pair per epoch (sop 5, inshop 2); fastap supplement section A",
    "batches": "cuts an epoch short (default every category pair per_pair times); the suite's choice",
}
