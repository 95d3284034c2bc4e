"""A method of the config = loss + optional miner (+ the batch sampler, chosen in training)."""

from __future__ import annotations

import torch
from torch import nn

from dmlbench import losses, miners


class Criterion(nn.Module):
    """Calls the loss on a batch, through the miner when the method has one."""

    def __init__(self, method: dict):
        super().__init__()
        self.loss = losses.build(**method["loss"])
        self.miner = miners.build(**method["miner"]) if method.get("miner") else None

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.loss(embeddings, labels, miner=self.miner)
