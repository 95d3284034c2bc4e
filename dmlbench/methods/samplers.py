"""Batch samplers by name. Each yields lists of dataset indices, one list per batch, and is
deterministic given its `torch.Generator`.

- `m_per_class`: batch.size / batch.per_class classes × batch.per_class images (most papers);
- `shuffle`: a plain permutation cut into batches (proxy losses);
- `random`, `category_pairs`, `vehicleid`: the fastap supplement's samplers (section A), which keep
  every sampled class whole ("a minibatch will include all images from a class once that class
  gets sampled") and build batches from super-categories; `hard` picks category_pairs, or
  vehicleid on a dataset with unlabelled vehicles.
"""

from __future__ import annotations

import inspect
import itertools

import numpy as np
import torch

from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import Registry
from dmlbench.run_config import RunConfig

SAMPLERS = Registry("sampler", group="dmlbench.samplers")


class BatchSampler:
    """A sampler: iterating it gives one epoch's batches (lists of indices into the training table),
    `len` the batches per epoch; its constructor takes those of `build`'s offers it names (labels,
    batch_size, per_class, generator, batches, small_classes, supers, per_pair)."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


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
                f"{self.classes_per_batch} classes but the training split has {len(classes)}"
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


def build(
    name: str,
    labels,
    batch_size: int,
    per_class: int,
    generator,
    batches=None,
    small_classes: str = "fill",
    supers=None,
    per_pair: int = 5,
):
    """The sampler `name`, given the settings it takes (the others are not its own)."""
    offered = {
        "labels": labels,
        "batch_size": batch_size,
        "per_class": per_class,
        "generator": generator,
        "batches": batches,
        "small_classes": small_classes,
        "supers": supers,
        "per_pair": per_pair,
    }
    wanted = inspect.signature(SAMPLERS.get(name)).parameters
    return SAMPLERS.build(name, **{k: v for k, v in offered.items() if k in wanted})


def from_config(cfg: RunConfig, labels, supers, generator, batches=None):
    """The batch sampler of a resolved run config: its method's sampler with the run's `batch`
    settings, over the training `labels` (and `supers`), `batches` batches."""
    batch = cfg.batch
    return build(
        cfg.method.sampler,
        labels,
        batch.size,
        batch.per_class,
        generator,
        batches,
        batch.small_classes,
        supers,
        batch.per_pair,
    )
