"""The miners' registry (every module of this package registers its miners in it when imported:
the registry imports them on its first lookup) and the interface every miner keeps."""

from __future__ import annotations

from dmlbench.core.registry import Registry
from dmlbench.methods.pairs import PairBatch

MINERS = Registry("miner", package="dmlbench.methods.miners", group="dmlbench.miners")


class Miner:
    """A miner: called with the batch's `PairBatch`, returns the `PairBatch` the loss should see,
    its pair masks narrowed (a pair miner) or its `triplets` set (a triplet miner, whose triplets
    then take precedence over the masks: `PairBatch.pair_masks`). Its constructor's keyword
    parameters are its settings, declared as a loss's are: annotations, `limits`, `about`."""

    def __call__(self, batch: PairBatch) -> PairBatch:
        raise NotImplementedError
