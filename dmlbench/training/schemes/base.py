"""The extension point of the training loop, and the plain scheme (today's loop)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import torch

from dmlbench.methods import samplers
from dmlbench.run_config import RunConfig


@dataclass
class Step:
    """One iteration as the scheme planned it: the dataset indices of its batch and, when the
    scheme restricts the pairs a loss may use, the B×B mask of allowed pairs."""

    indices: list[int]
    pairs: torch.Tensor | None = None
    representatives: torch.Tensor | None = None  # bool per batch item (profs)
    starts_cycle: bool = False


class TrainingScheme:
    """How iterations are built. The loop calls, per epoch, `batches(generator, count)` (the batch
    sampler of the DataLoader); per iteration `begin_step()` before the forward pass (which returns
    the `Step` the current batch was drawn as), `penalty()` (an extra term of the objective, or
    None) and `end_step(step, embeddings)` after the update. `state_dict()` goes into the
    checkpoint, so a resumed run continues exactly as an uninterrupted one.

    The DataLoader draws batches ahead of the iterations (prefetching): planned steps wait in a
    queue and are taken in order, so each iteration gets the plan of the batch it trains on. A
    scheme whose plan reads the steps before it (`plans_from_training`) is loaded without workers,
    so the plan of step k sees every step before k whatever `loader.workers` says.
    """

    plans_from_training = False

    def __init__(self, cfg: RunConfig, labels, supers, parameters, criterion):
        self.cfg, self.labels, self.supers = cfg, list(labels), supers
        self.parameters = [p for p in parameters if p.requires_grad]
        self.criterion = criterion
        self._planned: deque[Step] = deque()

    def batches(self, generator: torch.Generator, count: int | None):
        """The batch sampler of one epoch (an object with `__len__` and `__iter__`)."""
        return _Planned(self, self.plan(generator, count))

    def plan(self, generator: torch.Generator, count: int | None):
        """An iterable of the epoch's `Step`s (with `__len__`), drawn from `generator`."""
        raise NotImplementedError

    def begin_step(self) -> Step:
        return self._planned.popleft()

    def penalty(self) -> torch.Tensor | None:
        return None

    def end_step(self, step: Step, embeddings: torch.Tensor) -> None:
        pass

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


class _Planned:
    """Batch sampler that records each batch's `Step` for `begin_step`."""

    def __init__(self, scheme: TrainingScheme, sampler):
        self.scheme, self.sampler = scheme, sampler

    def __len__(self) -> int:
        return len(self.sampler)

    def __iter__(self):
        for step in self.sampler:
            self.scheme._planned.append(step)
            yield step.indices


class PlainScheme(TrainingScheme):
    """The method's batch sampler (`samplers.build`), no extra term, no state."""

    def plan(self, generator, count):
        return Steps(samplers.from_config(self.cfg, self.labels, self.supers, generator, count))


class Steps:
    """Wraps a batch sampler's index lists as `Step`s."""

    def __init__(self, sampler):
        self.sampler = sampler

    def __len__(self) -> int:
        return len(self.sampler)

    def __iter__(self):
        for indices in self.sampler:
            yield Step(list(indices))
