"""Miners by name: each maps a `PairBatch` to a `PairBatch` restricted to the pairs or triplets it keeps."""

from dmlbench.registry import Registry

MINERS = Registry("miner")

from dmlbench.methods.miners import pair_miners, triplet_miners  # noqa: E402,F401  (registers the miners)


def build(name: str, **params):
    return MINERS.build(name, **params)


def names() -> list[str]:
    return MINERS.names()


__all__ = ["build", "names", "MINERS"]
