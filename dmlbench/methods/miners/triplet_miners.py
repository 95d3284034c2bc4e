"""Per-anchor triplet mining of the ephn paper: one triplet per anchor, chosen by its similarities."""

from __future__ import annotations

import torch

from dmlbench.methods.miners.base import MINERS, Miner
from dmlbench.methods.pairs import PairBatch

POSITIVES = ("easy", "hard")
NEGATIVES = ("hard", "semihard", "easy")


@MINERS.register("per_anchor")
class PerAnchorTripletMiner(Miner):
    """For every anchor a, one triplet (a, p, n):

    - positive `easy`: the most similar positive (max S_ap); `hard`: the least similar;
    - negative `hard`: the most similar negative (max S_an); `semihard`: the most similar negative
      still less similar than the chosen positive (S_an < S_ap); `easy`: the least similar.

    EPHN = (easy, hard), EPSHN = (easy, semihard), HPHN = (hard, hard), EPEN = (easy, easy).
    Anchors without a valid positive or negative are skipped and counted (`take_stats`).
    `one_triplet_per_image`: anchors in batch order each take their triplet among images no
    earlier triplet used, so every image is in at most one triplet (ephn.f3).
    `duplicate_threshold`: positives more similar than this are not candidates (the authors' code
    excludes near-duplicates with 0.9999; the paper does not, default None).
    `drop_nonpositive`: the authors' EasyPositiveHardNegative code drops an anchor's triplet when
    its chosen positive or negative similarity is ≤ 0 (`Mask_not_drop_pos/neg`); the paper and
    their HardNegative code keep it (default False).
    """

    # checked when the plan loads (methods/declared.py)
    limits = {"positive": POSITIVES, "negative": NEGATIVES, "duplicate_threshold": "[-1, 1]"}
    about = {
        "positive": "easy: most similar positive (max S_ap), or hard: least similar; ephn paper section 4",
        "negative": "hard: max S_an, semihard: max S_an below S_ap, or easy: min S_an; ephn paper sections 4, 6.3",
        "one_triplet_per_image": "each image in at most one triplet of the batch; ephn paper section 6.1",
        "duplicate_threshold": "positives more similar than this are left out (code: 0.9999); the authors' code",
        "drop_nonpositive": "drop a triplet whose chosen S_ap or S_an is at most 0; the authors' code",
    }

    def __init__(
        self,
        positive: str = "easy",
        negative: str = "hard",
        one_triplet_per_image: bool = False,
        duplicate_threshold: float | None = None,
        drop_nonpositive: bool = False,
    ):
        if positive not in POSITIVES:
            raise ValueError(f"positive must be one of {POSITIVES}, not {positive!r}")
        if negative not in NEGATIVES:
            raise ValueError(f"negative must be one of {NEGATIVES}, not {negative!r}")
        self.positive, self.negative = positive, negative
        self.one_triplet_per_image = one_triplet_per_image
        self.duplicate_threshold = duplicate_threshold
        self.drop_nonpositive = drop_nonpositive
        self._anchors = self._skipped = 0

    def take_stats(self) -> dict:
        """Anchors seen and skipped since the last call."""
        stats = {"anchors": self._anchors, "skipped_anchors": self._skipped}
        self._anchors = self._skipped = 0
        return stats

    @torch.no_grad()
    def __call__(self, batch: PairBatch) -> PairBatch:
        s = batch.sim.detach()
        pos = batch.pos
        if self.duplicate_threshold is not None:
            pos = pos & (s <= self.duplicate_threshold)
        if self.one_triplet_per_image:
            a, p, n = self._disjoint(s, pos, batch.neg)
        else:
            a, p, n = self._choose(s, pos, batch.neg)
        if self.drop_nonpositive:
            kept = (s[a, p] > 0) & (s[a, n] > 0)
            a, p, n = a[kept], p[kept], n[kept]
        self._anchors += len(s)
        self._skipped += len(s) - len(a)
        return batch.with_triplets(a, p, n)

    def _choose(self, s, pos, neg):
        """One triplet per anchor over all images (vectorised)."""
        has_pos = pos.any(dim=1)
        if self.positive == "easy":
            p = s.masked_fill(~pos, float("-inf")).argmax(dim=1)
        else:
            p = s.masked_fill(~pos, float("inf")).argmin(dim=1)
        candidates = neg
        if self.negative == "semihard":
            candidates = neg & (s < s.gather(1, p[:, None]))
        if self.negative == "easy":
            n = s.masked_fill(~candidates, float("inf")).argmin(dim=1)
        else:
            n = s.masked_fill(~candidates, float("-inf")).argmax(dim=1)
        a = (has_pos & candidates.any(dim=1)).nonzero(as_tuple=True)[0]
        return a, p[a], n[a]

    def _disjoint(self, s, pos, neg):
        """Anchors in batch order, each image used by at most one triplet."""
        free = torch.ones(len(s), dtype=torch.bool, device=s.device)
        chosen = []
        for anchor in range(len(s)):
            if not free[anchor]:
                continue
            row = slice(anchor, anchor + 1)
            others = free.clone()
            others[anchor] = False
            a, p, n = self._choose(s[row], pos[row] & others, neg[row] & others)
            if len(a):
                chosen.append((anchor, int(p[0]), int(n[0])))
                free[[anchor, int(p[0]), int(n[0])]] = False
        if not chosen:
            empty = torch.zeros(0, dtype=torch.long, device=s.device)
            return empty, empty, empty
        a, p, n = torch.tensor(chosen, dtype=torch.long, device=s.device).T
        return a, p, n
