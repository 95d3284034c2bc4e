"""The batch view every pair-based method works on: cosine similarities and pair masks."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class PairBatch:
    """Similarities S (B×B) of L2-normalised embeddings and the pairs a loss may use.

    `pos` and `neg` are boolean B×B masks (row = anchor). `triplets`, when a triplet miner
    has run, holds index tensors (anchor, positive, negative) and takes precedence over the masks.
    `labels` are the batch's class labels (a loss with per-class parameters reads them).
    """

    sim: torch.Tensor
    pos: torch.Tensor
    neg: torch.Tensor
    triplets: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None
    dim: int | None = None  # embedding size, when built from embeddings
    labels: torch.Tensor | None = None
    embeddings: torch.Tensor | None = None  # as the head gave them (not normalised): a PML miner reads them

    @classmethod
    def from_embeddings(cls, embeddings: torch.Tensor, labels: torch.Tensor) -> "PairBatch":
        x = F.normalize(embeddings, dim=1)
        return replace(cls.from_similarity(x @ x.T, labels), dim=embeddings.shape[1], embeddings=embeddings)

    @classmethod
    def from_similarity(cls, sim: torch.Tensor, labels: torch.Tensor) -> "PairBatch":
        same = labels[:, None] == labels[None, :]
        eye = torch.eye(len(labels), dtype=torch.bool, device=labels.device)
        return cls(sim=sim, pos=same & ~eye, neg=~same, labels=labels)

    def with_pairs(self, pos: torch.Tensor, neg: torch.Tensor) -> "PairBatch":
        return replace(self, pos=pos, neg=neg)

    def with_triplets(self, anchors, positives, negatives) -> "PairBatch":
        return replace(self, triplets=(anchors, positives, negatives))

    def pair_masks(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(pos, neg) masks of the pairs a pair loss sees: those of the mined triplets when a
        triplet miner ran, else the masks."""
        if self.triplets is None:
            return self.pos, self.neg
        a, p, n = self.triplets
        pos = torch.zeros_like(self.pos)
        neg = torch.zeros_like(self.neg)
        pos[a, p] = True
        neg[a, n] = True
        return pos, neg

    def pair_counts(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(pos, neg) as counts: how often each pair occurs among the mined triplets (a negative
        drawn twice for one anchor counts twice, as in distance-weighted sampling), else the masks
        as 0/1. Losses that average over sampled pairs weight each pair by its count."""
        if self.triplets is None:
            return self.pos.to(self.sim.dtype), self.neg.to(self.sim.dtype)
        a, p, n = self.triplets
        ones = torch.ones(len(a), dtype=self.sim.dtype, device=self.sim.device)
        pos = torch.zeros_like(self.sim).index_put_((a, p), ones, accumulate=True)
        neg = torch.zeros_like(self.sim).index_put_((a, n), ones, accumulate=True)
        return pos, neg

    def distances(self, eps: float = 1e-12) -> torch.Tensor:
        """Euclidean distances of the L2-normalised embeddings: D = sqrt(2 - 2 S)."""
        return torch.sqrt(torch.clamp(2.0 - 2.0 * self.sim, min=eps))

    def all_triplets(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Every (a, p, n) with p a positive and n a negative of anchor a."""
        valid = self.pos[:, :, None] & self.neg[:, None, :]
        return tuple(valid.nonzero(as_tuple=True))
