"""The optimisers a run may name (`optimizer.name`), each a builder `(parameter groups, settings)
→ torch optimiser` registered in `OPTIMISERS`; the settings schema takes its names from here.
Importing this module does not import torch (the plan reads the names)."""

from __future__ import annotations

from dmlbench.errors import ConfigError
from dmlbench.registry import Registry

OPTIMISERS = Registry("optimizer", error=ConfigError)


@OPTIMISERS.register("adam")
def adam(groups: list[dict], cfg: dict):
    """Adam (Kingma & Ba), weight decay added to the gradient (PyTorch's L2 form)."""
    import torch

    return torch.optim.Adam(groups, lr=cfg["lr"], betas=tuple(cfg["betas"]), weight_decay=cfg["weight_decay"])


@OPTIMISERS.register("adamw")
def adamw(groups: list[dict], cfg: dict):
    """AdamW (Loshchilov & Hutter): weight decay decoupled from the gradient step."""
    import torch

    return torch.optim.AdamW(groups, lr=cfg["lr"], betas=tuple(cfg["betas"]), weight_decay=cfg["weight_decay"])


@OPTIMISERS.register("rmsprop")
def rmsprop(groups: list[dict], cfg: dict):
    """RMSprop with momentum (PyTorch's defaults: α 0.99, ε 1e-8)."""
    import torch

    return torch.optim.RMSprop(groups, lr=cfg["lr"], momentum=cfg["momentum"], weight_decay=cfg["weight_decay"])


@OPTIMISERS.register("sgd")
def sgd(groups: list[dict], cfg: dict):
    """SGD with (heavy-ball) momentum."""
    import torch

    return torch.optim.SGD(groups, lr=cfg["lr"], momentum=cfg["momentum"], weight_decay=cfg["weight_decay"])


def state_tensors(cfg: dict) -> int:
    """Tensors the optimiser keeps per parameter (the preflight's estimate of a checkpoint): Adam's
    and AdamW's two moments; RMSprop's square average and, with momentum, its buffer; SGD's buffer
    with momentum."""
    with_momentum = 1 if cfg.get("momentum") else 0
    return {"adam": 2, "adamw": 2, "rmsprop": 1 + with_momentum, "sgd": with_momentum}[cfg["name"]]


def build(groups: list[dict], cfg: dict):
    """The optimiser `cfg["name"]` over `groups`."""
    return OPTIMISERS.get(cfg["name"])(groups, cfg)
