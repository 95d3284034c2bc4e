"""One optimiser step of a method on a batch (`train_step`), and the stop when training diverges:
a non-finite loss, gradient or parameter ends the run with `DivergedError`."""

from __future__ import annotations

import torch

from dmlbench.core.errors import DmlbenchError


class DivergedError(DmlbenchError):
    """The loss became NaN or infinite."""


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
    and whether a step was taken (a batch without a valid pair or triplet has no gradient)."""
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
