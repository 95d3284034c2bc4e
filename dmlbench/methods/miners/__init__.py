"""Miners by name: each maps a `PairBatch` to a `PairBatch` restricted to the pairs or triplets it keeps."""

from dmlbench.methods.miners.base import MINERS


def build(name: str, **params):
    """The miner registered as `name`, its parameters checked by type and range as the plan checks them."""
    from dmlbench.methods import declared

    declared.check("miner", {"name": name, **params}, f"miners.build({name!r})")
    return MINERS.build(name, **params)


def names() -> list[str]:
    return MINERS.names()


__all__ = ["build", "names", "MINERS"]
