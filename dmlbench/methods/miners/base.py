"""The miners' registry: every module of this package registers its miners in it when imported
(the registry imports them on its first lookup)."""

from dmlbench.core.registry import Registry

MINERS = Registry("miner", package="dmlbench.methods.miners", group="dmlbench.miners")
