"""The optimisers a run may name (`optimizer.name`), each a builder `(parameter groups, settings)
→ torch optimiser` registered in `OPTIMISERS` (the settings schema takes its names from here),
and the run's optimisers over a model and its loss. Importing this module does not import torch
(the plan reads the names)."""

from __future__ import annotations

from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import Registry
from dmlbench.run_config import Optimizer

OPTIMISERS = Registry("optimizer", error=ConfigError)


@OPTIMISERS.register("adam")
def adam(groups: list[dict], cfg: Optimizer):
    """Adam (Kingma & Ba), weight decay added to the gradient (PyTorch's L2 form)."""
    import torch

    return torch.optim.Adam(groups, lr=cfg.lr, betas=tuple(cfg.betas), weight_decay=cfg.weight_decay)


@OPTIMISERS.register("adamw")
def adamw(groups: list[dict], cfg: Optimizer):
    """AdamW (Loshchilov & Hutter): weight decay decoupled from the gradient step."""
    import torch

    return torch.optim.AdamW(groups, lr=cfg.lr, betas=tuple(cfg.betas), weight_decay=cfg.weight_decay)


@OPTIMISERS.register("rmsprop")
def rmsprop(groups: list[dict], cfg: Optimizer):
    """RMSprop with momentum (PyTorch's defaults: α 0.99, ε 1e-8)."""
    import torch

    return torch.optim.RMSprop(groups, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)


@OPTIMISERS.register("sgd")
def sgd(groups: list[dict], cfg: Optimizer):
    """SGD with (heavy-ball) momentum."""
    import torch

    return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)


def state_tensors(cfg: Optimizer) -> int:
    """Tensors the optimiser keeps per parameter (the preflight's estimate of a checkpoint): Adam's
    and AdamW's two moments; RMSprop's square average and, with momentum, its buffer; SGD's buffer
    with momentum."""
    with_momentum = 1 if cfg.momentum else 0
    return {"adam": 2, "adamw": 2, "rmsprop": 1 + with_momentum, "sgd": with_momentum}[cfg.name]


def build(groups: list[dict], cfg: Optimizer):
    """The optimiser `cfg.name` over `groups`."""
    return OPTIMISERS.get(cfg.name)(groups, cfg)


def build_optimizer(model, criterion, cfg: Optimizer):
    """The run's optimiser (`dmlbench.training.optimisers`) over the trunk (lr; with `layer_decay` < 1
    a timm transformer's blocks at lr × layer_decay^(depth − block)), the embedding layer (lr ×
    head_lr_mult) and, when they share it (`loss_params.optimizer: shared`), the loss's own parameters
    such as proxies (lr × loss_lr_mult)."""
    groups = model.parameter_groups(cfg.lr, cfg.head_lr_mult, cfg.layer_decay)
    loss_params = [p for p in criterion.parameters() if p.requires_grad]
    if loss_params and cfg.loss_params.optimizer == "shared":
        groups.append({"params": loss_params, "lr": cfg.lr * cfg.loss_lr_mult})
    return build(groups, cfg)


def build_loss_optimizer(criterion, cfg: Optimizer):
    """The loss's own parameters' optimizer when they have one (`loss_params.optimizer: sgd`, Wu et
    al.'s margin β: SGD at its own constant rate, with momentum, no weight decay), else None."""
    own = cfg.loss_params
    loss_params = [p for p in criterion.parameters() if p.requires_grad]
    if own.optimizer == "shared" or not loss_params:
        return None
    return sgd([{"params": loss_params}], Optimizer(name="sgd", lr=own.lr, momentum=own.momentum, weight_decay=0.0))
