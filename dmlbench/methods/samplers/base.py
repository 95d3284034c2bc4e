"""The samplers' registry (every module of this package registers its samplers in it when
imported: the registry imports them on its first lookup) and the interface every sampler keeps."""

from __future__ import annotations

from torch.utils.data import Sampler

from dmlbench.core.registry import Registry

SAMPLERS = Registry("sampler", package="dmlbench.methods.samplers", group="dmlbench.samplers")


class BatchSampler(Sampler):
    """A sampler: iterating it gives one epoch's batches (lists of indices into the training table),
    `len` the batches per epoch; its constructor takes those of `build`'s offers it names (labels,
    batch_size, per_class, generator, batches, small_classes, supers, per_pair). A torch `Sampler`
    of batches: `DataLoader(dataset, batch_sampler=sampler)` in a loop of one's own."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError
