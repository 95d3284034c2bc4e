"""One optimiser step of a method on a batch (`train_step`), and the stops when training cannot go
on: a non-finite loss, gradient or parameter ends the run with `DivergedError`; a loss that is not
zero but has no gradient (its value does not depend on the embeddings) with `UntrainableError`."""

from __future__ import annotations

import torch

from dmlbench.core.errors import DmlbenchError


class DivergedError(DmlbenchError):
    """The loss became NaN or infinite."""


class UntrainableError(DmlbenchError):
    """No step can change the network: a loss without a gradient, or a first epoch of skipped steps."""


def train_step(
    model,
    criterion,
    optimizers,
    images,
    labels,
    pairs=None,
    penalty=lambda: None,
    bf16: bool = False,
    where: str = "",
    clip_grad_norm: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """One optimiser step of the method on a batch already on the device: forward (bf16 autocast
    when asked), the method's loss (restricted to `pairs` when given) plus the scheme's
    `penalty()`, backward, the gradients of the run's optimiser (not a loss's own) scaled to a
    total norm of at most `clip_grad_norm` when set, and every optimiser's step, stopping
    (DivergedError) on a non-finite loss, gradient or parameter. Returns the loss, the embeddings
    and whether a step was taken (a batch without a valid pair or triplet has a zero loss without
    gradient: skipped; a non-zero loss without gradient is an UntrainableError)."""
    optimizer = optimizers[0]
    with torch.autocast(images.device.type, dtype=torch.bfloat16, enabled=bf16):
        embeddings = model(images)
    loss = criterion(embeddings.float(), labels, pairs=pairs)
    if not torch.isfinite(loss):
        raise DivergedError(
            f"training diverged: {where}: loss is {loss.item()}; lower optimizer.lr "
            f"(now {optimizer.param_groups[0]['lr']:g})"
        )
    extra = penalty()
    objective = loss if extra is None else loss + extra
    for each in optimizers:
        each.zero_grad(set_to_none=True)
    if not (objective.requires_grad and objective.grad_fn is not None):
        if loss.item() != 0:
            raise UntrainableError(
                f"{where}: the loss is {loss.item():.6g} but has no gradient, so no step can change the "
                f"network: its value does not depend on the embeddings (a .detach(), .item(), "
                f"torch.no_grad() or a new tensor in the loss's forward?); return a tensor computed from them"
            )
        return loss, embeddings, False
    objective.backward()
    _check_finite(_grads(optimizers), f"{where}: a gradient is non-finite", optimizer)
    if clip_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(_params(optimizers[:1]), clip_grad_norm)
    for each in optimizers:
        each.step()
    _check_finite(
        _params(optimizers), f"{where}: the parameters became non-finite after the optimiser's step", optimizer
    )
    return loss, embeddings, True


def check_first_epoch(steps: int, skipped: int) -> None:
    """A first epoch whose every step was skipped never updated the network: the run cannot train."""
    if steps and skipped == steps:
        raise UntrainableError(
            f"every step of the first epoch was skipped ({skipped} of {steps}): no batch gave the loss a "
            f"pair or triplet to learn from, so the network was never updated; check batch.per_class (at "
            f"least 2 images of a class per batch) and the miner's settings"
        )


def _params(optimizers) -> list[torch.Tensor]:
    return [p for o in optimizers for group in o.param_groups for p in group["params"]]


def _grads(optimizers) -> list[torch.Tensor]:
    return [p.grad for p in _params(optimizers) if p.grad is not None]


def _check_finite(tensors: list[torch.Tensor], what: str, optimizer) -> None:
    """Stop the run (DivergedError) when any element of `tensors` is NaN or infinite: one fused
    max-abs per tensor list, one synchronisation."""
    if not tensors:
        return
    largest = torch.stack(torch._foreach_norm(tensors, float("inf"))).max()
    if not torch.isfinite(largest):
        raise DivergedError(f"training diverged: {what}; lower optimizer.lr (now {optimizer.param_groups[0]['lr']:g})")
