"""Backbones and the embedding head; `build(config)` returns the embedding network of a run.

Imported lazily: the catalogue modules (`timm_trunks`) are read by the plan without torch."""

__all__ = ["EmbeddingNet", "build"]


def __getattr__(name: str):
    if name in __all__:
        from dmlbench.models import embedding

        return getattr(embedding, name)
    raise AttributeError(f"module 'dmlbench.models' has no attribute {name!r}")
