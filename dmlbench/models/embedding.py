"""Backbone → global pooling → linear → L2 normalisation.

Every backbone takes RGB images in [0, 1]; the network converts them to what its weights expect
(the backbone's mean/std: ImageNet's for torchvision models, timm's per trunk; BGR 0-255 minus
Caffe means for BN-Inception).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dmlbench.core.errors import ConfigError
from dmlbench.models import bninception
from dmlbench.models.backbones import BACKBONES
from dmlbench.run_config import Model


class EmbeddingNet(nn.Module):
    """Images (RGB, [0, 1]) → embeddings of size `embedding_dim`, L2-normalised unless
    `normalize=False` (Sohn's N-pair loss trains unnormalised embeddings with an L2 penalty;
    retrieval then normalises them, `dmlbench.evaluation.model_eval.embed`)."""

    def __init__(
        self,
        backbone: str = "resnet50",
        embedding_dim: int = 512,
        pretrained: bool = True,
        pooling: str = "avg",
        frozen_bn: bool = False,
        weights_path: str | None = None,
        normalize: bool = True,
        weights_sha256: str | None = None,
        frozen_patch_embed: bool = False,
    ):
        super().__init__()
        self.normalize = normalize
        BACKBONES.check(backbone, "model.backbone")
        if pooling not in ("avg", "max"):
            raise ConfigError(f"model.pooling must be 'avg' or 'max', not {pooling!r}")
        self.backbone_name, self.pooling, self.frozen_bn = backbone, pooling, frozen_bn
        spec = BACKBONES.get(backbone)
        self.trunk, features = spec.build(pretrained, weights_path, weights_sha256)
        if frozen_patch_embed:  # a timm transformer's patch embedding keeps its pretrained weights
            for p in self.trunk.net.patch_embed.parameters():
                p.requires_grad_(False)
        self.caffe_input = spec.caffe_input
        self.head = nn.Linear(features, embedding_dim)
        if spec.caffe_input:
            self.register_buffer("mean", torch.tensor(bninception.MEAN_BGR).view(1, 3, 1, 1))
            self.register_buffer("std", torch.ones(1, 3, 1, 1))
        else:
            self.register_buffer("mean", torch.tensor(spec.mean).view(1, 3, 1, 1))
            self.register_buffer("std", torch.tensor(spec.std).view(1, 3, 1, 1))

    def _prepare_input(self, images: torch.Tensor) -> torch.Tensor:
        if self.caffe_input:
            images = images.flip(1) * 255.0
        return (images - self.mean) / self.std

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        maps = self.trunk(self._prepare_input(images))
        pooled = maps.amax(dim=(2, 3)) if self.pooling == "max" else maps.mean(dim=(2, 3))
        embeddings = self.head(pooled)
        return F.normalize(embeddings, dim=1) if self.normalize else embeddings

    def train(self, mode: bool = True):
        super().train(mode)
        if mode and self.frozen_bn:
            for module in self.trunk.modules():
                if isinstance(module, nn.modules.batchnorm._BatchNorm):
                    module.eval()
                    for p in module.parameters():
                        p.requires_grad_(False)
        return self

    def parameter_groups(self, lr: float, head_lr_mult: float, layer_decay: float = 1.0) -> list[dict]:
        """Optimiser groups: the trunk at `lr` (with `layer_decay` < 1, a timm trunk's layers as timm
        numbers them, layer l of L at lr × layer_decay^(L − l)), the embedding layer at
        `lr × head_lr_mult`."""
        head = {"params": list(self.head.parameters()), "lr": lr * head_lr_mult}
        if layer_decay == 1.0:
            return [{"params": [p for p in self.trunk.parameters() if p.requires_grad], "lr": lr}, head]
        return [*timm_layer_groups(self.trunk, lr, layer_decay), head]


def timm_layer_groups(trunk: nn.Module, lr: float, layer_decay: float) -> list[dict]:
    """Layer-wise learning-rate decay over a timm network (timm's own layer numbering,
    `timm.optim.param_groups_layer_decay`); weight decay stays the optimiser's, for every group."""
    from timm.optim import param_groups_layer_decay

    net = getattr(trunk, "net", trunk)
    groups = param_groups_layer_decay(net, weight_decay=0.0, no_weight_decay_list=(), layer_decay=layer_decay)
    return [{"params": [p for p in g["params"] if p.requires_grad], "lr": lr * g["lr_scale"]} for g in groups]


def build(model: Model) -> EmbeddingNet:
    """The embedding network of a run's `model` settings."""
    return EmbeddingNet(
        backbone=model.backbone,
        embedding_dim=model.embedding_dim,
        pretrained=model.pretrained,
        pooling=model.pooling,
        frozen_bn=model.frozen_bn,
        weights_path=model.weights,
        normalize=model.normalize,
        weights_sha256=model.weights_sha256,
        frozen_patch_embed=model.frozen_patch_embed,
    )
