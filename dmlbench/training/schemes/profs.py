"""PROFS (Algorithm 1 of "Deep metric learning with alternating projections onto feasible sets").

Training runs in cycles k = 1, 2, …. A cycle starts by drawing one representative image per class
(a different one each cycle, in a per-class random order that is reshuffled when a class runs
out) and by keeping θ(k), the parameters at that moment. For M iterations each batch holds a
subset of the classes, each as its representative plus I − 1 other images of the class, and the
objective is loss + λ/2 ‖θ − θ(k)‖² (a term of the objective: its gradient is λ(θ − θ(k))).
M = ceil(ρ / p(y)) with p(y) = B / (I L): each representative is used ρ times per cycle on
average. With `pairs: anchored`, pair losses see eq. 4.6's pairs (k_l, j): a representative k_l as
the anchor (row) and any other image j of the batch, so a miner mines only the representatives'
rows (C-, T- and M-PROFS: each representative gets as many hard negative pairs as it has positive
pairs, section 5.3). With `pairs: representative`, every pair with a representative at either end
is kept and only the terms between two non-representatives are dropped (the paper's lifted and MS
adaptation, section 5.3).

Hard negative class mining (HNCM): the embedding of every representative that appears in a batch
is stored; a batch's classes are a random seed class and the classes whose stored
representatives are most similar to it (one matrix-vector product over the L stored vectors).
Classes not yet stored follow in random order. With `representatives: none` (SoftTriple) there
are no representative images: batches come from the method's sampler, or, with HNCM, from
classes ranked by the loss's class centres (`class_vectors()` of the loss).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import torch
import torch.nn.functional as F

from dmlbench.core.errors import ConfigError
from dmlbench.training.schemes.base import PlainScheme, Step, TrainingScheme


def iterations_per_cycle(rho: float, batch_size: int, per_class: int, num_classes: int) -> int:
    """M = ceil(ρ / p(y)), p(y) = B / (I·L) (section 5.4.1), computed without rounding error."""
    return max(1, math.ceil(Fraction(rho).limit_denominator(10**6) * per_class * num_classes / batch_size))


class ProfsScheme(TrainingScheme):
    """Cycles of M iterations with a proximal term towards the cycle's starting parameters."""

    def __init__(self, cfg, labels, supers, parameters, criterion):
        super().__init__(cfg, labels, supers, parameters, criterion)
        options = cfg.scheme
        self.lam, self.hncm = float(options.lam), bool(options.hncm)
        self.plans_from_training = self.hncm  # HNCM ranks classes by the latest representatives
        self.with_images = options.representatives == "images"
        self.restrict_pairs = options.pairs in ("representative", "anchored") and self.with_images
        self.anchored = options.pairs == "anchored"
        self.anchor_rule = options.anchor
        labels = np.asarray(labels)
        classes, self.class_of = np.unique(labels, return_inverse=True)
        self.members = [np.flatnonzero(self.class_of == c) for c in range(len(classes))]
        self.offsets = np.concatenate([[0], np.cumsum([len(m) for m in self.members])])
        self.batch_size, self.per_class = cfg.batch.size, cfg.batch.per_class
        self.iterations = options.iterations or iterations_per_cycle(
            options.rho, self.batch_size, self.per_class, len(classes)
        )
        if self.hncm and not self.with_images and not hasattr(criterion.loss, "class_vectors"):
            raise ConfigError(
                f"scheme.hncm with representatives: none needs a loss with class "
                f"centres (softtriple, proxy_nca), not {cfg.method.loss['name']!r}"
            )
        if self.restrict_pairs and not criterion.restricts_pairs:
            raise ConfigError(
                f"scheme.pairs: {options.pairs} needs a pair loss; "
                f"{cfg.method.loss['name']!r} has no pairs to restrict: "
                f"set scheme.pairs: all"
            )
        self._plain = PlainScheme(cfg, labels, supers, [], criterion)
        L = len(classes)
        self.cycle = 0
        self.planned_in_cycle = 0
        self.representatives = torch.full((L,), -1, dtype=torch.long)
        self.rep_order = torch.from_numpy(np.concatenate(self.members)).long()
        self.rep_used = torch.tensor([len(m) for m in self.members])  # exhausted: shuffled first
        self.table = torch.zeros(L, cfg.model.embedding_dim)
        self.known = torch.zeros(L, dtype=torch.bool)
        self.anchor: list[torch.Tensor] | None = None
        self.target: list[torch.Tensor] | None = None

    # --- batches ---------------------------------------------------------------------------

    def plan(self, generator, count):
        count = count or max(1, len(self.labels) // self.batch_size)
        if not self.with_images and not self.hncm:
            return _FromSampler(self, self._plain.plan(generator, count))
        return _Drawn(self, generator, count)

    def _advance(self, generator) -> bool:
        """Count one planned iteration; start a new cycle first when the last one is complete."""
        starts = self.planned_in_cycle == 0
        if starts:
            self.cycle += 1
            if self.with_images:
                self._draw_representatives(generator)
        self.planned_in_cycle = (self.planned_in_cycle + 1) % self.iterations
        return starts

    def _draw_representatives(self, generator) -> None:
        for c, pool in enumerate(self.members):
            start, end = self.offsets[c], self.offsets[c + 1]
            if self.rep_used[c] >= len(pool):
                order = torch.randperm(len(pool), generator=generator)
                self.rep_order[start:end] = torch.from_numpy(pool)[order]
                self.rep_used[c] = 0
            self.representatives[c] = self.rep_order[start + self.rep_used[c]]
            self.rep_used[c] += 1

    def _classes(self, generator) -> list[int]:
        """The batch's classes in the order they fill it."""
        L = len(self.members)
        if not self.hncm:
            return torch.randperm(L, generator=generator).tolist()
        seed = int(torch.randint(L, (1,), generator=generator))
        rest = torch.randperm(L, generator=generator)
        table, known = self._class_table()
        near = hardest_classes(table, known, seed, self.batch_size) if known[seed] else []
        taken = set(near) | {seed}
        return [seed] + near + [c for c in rest.tolist() if c not in taken]

    def _class_table(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.with_images:
            return self.table, self.known
        with torch.no_grad():
            vectors = self.criterion.loss.class_vectors().detach().float().cpu()
        return vectors, torch.ones(len(vectors), dtype=torch.bool)

    def _fill(self, classes: list[int], generator) -> tuple[list[int], list[bool]]:
        batch, is_rep = [], []
        for c in classes:
            room = self.batch_size - len(batch)
            if room == 0:
                break
            pool = self.members[c]
            if self.with_images:
                rep = int(self.representatives[c])
                others = pool[pool != rep]
                order = torch.randperm(len(others), generator=generator).numpy()
                chosen = [rep] + others[order[: min(self.per_class - 1, room - 1)]].tolist()
                is_rep += [True] + [False] * (len(chosen) - 1)
            else:
                order = torch.randperm(len(pool), generator=generator).numpy()
                chosen = pool[order[: min(self.per_class, room)]].tolist()
                is_rep += [False] * len(chosen)
            batch += chosen
        return batch, is_rep

    def pair_mask(self, reps: torch.Tensor) -> torch.Tensor:
        """The B×B pairs (row = anchor) a pair loss may use: the representatives' rows
        (`anchored`), or every pair with a representative at either end (`representative`)."""
        if self.anchored:
            return reps[:, None].expand(len(reps), len(reps)).clone()
        return reps[:, None] | reps[None, :]

    # --- iterations ------------------------------------------------------------------------

    def begin_step(self) -> Step:
        step = super().begin_step()
        if step.starts_cycle or self.anchor is None:
            current = [p.detach().clone() for p in self.parameters]
            previous = self.anchor if self.anchor is not None else current
            self.anchor = current
            self.target = previous if self.anchor_rule == "previous_cycle_start" else current
        return step

    def penalty(self) -> torch.Tensor | None:
        """λ/2 ‖θ − θ(k)‖² over the trained parameters (network and loss)."""
        if self.lam == 0 or not self.parameters:
            return None
        total = sum((p - a).pow(2).sum() for p, a in zip(self.parameters, self.target))
        return 0.5 * self.lam * total

    def end_step(self, step: Step, embeddings: torch.Tensor) -> None:
        """Store the embeddings of the batch's representatives (HNCM)."""
        if not (self.hncm and self.with_images):
            return
        where = step.representatives.nonzero(as_tuple=True)[0]
        classes = torch.from_numpy(self.class_of[np.asarray(step.indices)[where.numpy()]])
        vectors = F.normalize(embeddings.detach()[where.to(embeddings.device)].float(), dim=1)
        self.table[classes] = vectors.cpu()
        self.known[classes] = True

    # --- checkpoint ------------------------------------------------------------------------

    def state_dict(self) -> dict:
        return {
            "cycle": self.cycle,
            "planned_in_cycle": self.planned_in_cycle,
            "representatives": self.representatives,
            "rep_order": self.rep_order,
            "rep_used": self.rep_used,
            "table": self.table,
            "known": self.known,
            "anchor": self.anchor,
            "target": self.target,
        }

    def load_state_dict(self, state: dict) -> None:
        self.cycle, self.planned_in_cycle = int(state["cycle"]), int(state["planned_in_cycle"])
        for key in ("representatives", "rep_order", "rep_used", "table", "known"):
            setattr(self, key, state[key].clone())
        device = self.parameters[0].device if self.parameters else "cpu"
        for key in ("anchor", "target"):
            value = state[key]
            setattr(self, key, None if value is None else [t.to(device) for t in value])


def hardest_classes(table: torch.Tensor, known: torch.Tensor, seed: int, count: int) -> list[int]:
    """Up to `count` classes other than `seed` whose stored vectors are most similar to the
    seed's (cosine), most similar first."""
    similarity = table @ table[seed]
    candidates = known.clone()
    candidates[seed] = False
    similarity = similarity.masked_fill(~candidates, float("-inf"))
    k = min(count, int(candidates.sum()))
    return torch.topk(similarity, k).indices.tolist() if k else []


class _Drawn:
    """The epoch's batches drawn by the scheme itself (representatives and/or HNCM)."""

    def __init__(self, scheme: ProfsScheme, generator, count: int):
        self.scheme, self.generator, self.count = scheme, generator, count

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        scheme = self.scheme
        for _ in range(self.count):
            starts = scheme._advance(self.generator)
            indices, is_rep = scheme._fill(scheme._classes(self.generator), self.generator)
            reps = torch.tensor(is_rep)
            pairs = scheme.pair_mask(reps) if scheme.restrict_pairs else None
            yield Step(indices, pairs=pairs, representatives=reps, starts_cycle=starts)


class _FromSampler:
    """The method's own batches, counted into cycles (the proximal term alone)."""

    def __init__(self, scheme: ProfsScheme, steps):
        self.scheme, self.steps = scheme, steps

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self):
        for step in self.steps:
            step.starts_cycle = self.scheme._advance(None)
            yield step
