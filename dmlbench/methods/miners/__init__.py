"""Miners by name (`pml:<Class>`: pytorch-metric-learning's): each maps a `PairBatch` to what it keeps."""

from dmlbench.methods.miners.base import MINERS


def build(name: str, **params):
    """The miner registered as `name`, its parameters checked by type and range as the plan checks them."""
    from dmlbench.methods import declared, pml

    declared.check("miner", {"name": name, **params}, f"miners.build({name!r})")
    if pml.is_pml(name):  # pytorch-metric-learning's miner of that class
        from dmlbench.methods.pml_loss import PMLMiner

        return PMLMiner(name, **params)
    return MINERS.build(name, **params)


def names() -> list[str]:
    return MINERS.names()


__all__ = ["build", "names", "MINERS"]
