"""Miners by name: each maps a `PairBatch` to a `PairBatch` restricted to the pairs or triplets it keeps."""

from dmlbench.methods.miners.base import MINERS


def build(name: str, **params):
    return MINERS.build(name, **params)


def names() -> list[str]:
    return MINERS.names()


__all__ = ["build", "names", "MINERS"]
