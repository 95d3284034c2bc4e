"""Backbones and the embedding head; `build(config)` returns the embedding network of a run."""

from dmlbench.models.embedding import EmbeddingNet, build

__all__ = ["EmbeddingNet", "build"]
