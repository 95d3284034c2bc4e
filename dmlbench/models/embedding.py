"""Backbone → global pooling → linear → L2 normalisation.

Every backbone takes RGB images in [0, 1]; the network converts them to what its weights expect
(ImageNet mean/std for torchvision models, BGR 0-255 minus Caffe means for BN-Inception).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
import torchvision
from torch import nn

from dmlbench.errors import ConfigError
from dmlbench.models import bninception, weights

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class SmallCNN(nn.Module):
    """Four conv-BN-ReLU blocks for CPU presets (no pretrained weights)."""

    out_features = 128

    def __init__(self):
        super().__init__()
        layers, channels = [], 3
        for width in (32, 64, 128, 128):
            layers += [nn.Conv2d(channels, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
                       nn.MaxPool2d(2, ceil_mode=True)]
            channels = width
        self.features = nn.Sequential(*layers)

    def forward(self, x):
        return self.features(x)


class SpatialCNN(nn.Module):
    """For images of a few pixels (scikit-learn's 8×8 digits): two conv-BN-ReLU-max-pool blocks,
    the map brought to 4×4 and flattened rather than pooled (where a stroke lies is what tells
    digits apart), then a 1,024-unit ReLU layer. Returns a 1×1 map, so global pooling keeps it."""

    out_features = 1024

    def __init__(self):
        super().__init__()
        layers, channels = [], 3
        for width in (64, 128):
            layers += [nn.Conv2d(channels, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
                       nn.MaxPool2d(2, ceil_mode=True)]
            channels = width
        self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                                      nn.Linear(channels * 16, self.out_features), nn.ReLU())

    def forward(self, x):
        return self.features(x)[:, :, None, None]


def _torchvision_trunk(name: str, pretrained: bool) -> tuple[nn.Module, int]:
    models = torchvision.models
    table = {
        "resnet18": (models.resnet18, models.ResNet18_Weights.IMAGENET1K_V1),
        "resnet50": (models.resnet50, models.ResNet50_Weights.IMAGENET1K_V1),
        "googlenet": (models.googlenet, models.GoogLeNet_Weights.IMAGENET1K_V1),
    }
    builder, enum = table[name]
    if pretrained:
        # googlenet: the arguments torchvision builds its ImageNet model with (aux heads dropped after)
        extra = {"aux_logits": True, "transform_input": True, "init_weights": False} if name == "googlenet" else {}
        net = weights.torchvision_weights(builder, enum, **extra)
        if name == "googlenet":
            net.aux_logits, net.aux1, net.aux2 = False, None, None
    else:
        extra = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
        net = builder(weights=None, **extra)
    features = net.fc.in_features
    if name == "googlenet":
        net.avgpool, net.dropout, net.fc = nn.Identity(), nn.Identity(), nn.Identity()
        trunk = _GoogLeNetTrunk(net)
    else:
        trunk = nn.Sequential(*list(net.children())[:-2])
    return trunk, features


class _GoogLeNetTrunk(nn.Module):
    """torchvision GoogLeNet up to its last inception block (feature maps, not pooled).

    With ImageNet weights torchvision sets `transform_input`: the weights (ported from another
    framework) expect (x - 0.5) / 0.5 per channel, and `_transform_input` maps the
    ImageNet-normalised input onto that scale, as torchvision's own forward does. Random
    initialisation leaves it off (then the normalised input goes in as it is)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        n = self.net
        x = n._transform_input(x)
        x = n.maxpool1(n.conv1(x))
        x = n.maxpool2(n.conv3(n.conv2(x)))
        x = n.maxpool3(n.inception3b(n.inception3a(x)))
        x = n.inception4e(n.inception4d(n.inception4c(n.inception4b(n.inception4a(x)))))
        return n.inception5b(n.inception5a(n.maxpool4(x)))


SMALL = {"small_cnn": SmallCNN, "spatial_cnn": SpatialCNN}  # CPU-sized, never pretrained
BACKBONES = ("small_cnn", "spatial_cnn", "resnet18", "resnet50", "googlenet", "bninception")


class EmbeddingNet(nn.Module):
    """Images (RGB, [0, 1]) → embeddings of size `embedding_dim`, L2-normalised unless
    `normalize=False` (Sohn's N-pair loss trains unnormalised embeddings with an L2 penalty;
    retrieval then normalises them, `dmlbench.evaluation.model_eval.embed`)."""

    def __init__(self, backbone: str = "resnet50", embedding_dim: int = 512, pretrained: bool = True,
                 pooling: str = "avg", frozen_bn: bool = False, weights_path: str | None = None,
                 normalize: bool = True):
        super().__init__()
        self.normalize = normalize
        if backbone not in BACKBONES:
            raise ConfigError(f"unknown backbone {backbone!r}; known: {', '.join(BACKBONES)}")
        if pooling not in ("avg", "max"):
            raise ConfigError(f"model.pooling must be 'avg' or 'max', not {pooling!r}")
        self.backbone_name, self.pooling, self.frozen_bn = backbone, pooling, frozen_bn
        if backbone in SMALL:
            self.trunk, features = SMALL[backbone](), SMALL[backbone].out_features
        elif backbone == "bninception":
            self.trunk, features = bninception.BNInception(), bninception.BNInception.out_features
            if pretrained:
                state = weights.load_checked(bninception.WEIGHTS_URL,
                                             bninception.WEIGHTS_SHA256, weights_path)
                state = {k: v for k, v in state.items() if not k.startswith("last_linear")}
                self.trunk.load_state_dict(state)
        else:
            self.trunk, features = _torchvision_trunk(backbone, pretrained)
        self.head = nn.Linear(features, embedding_dim)
        if backbone == "bninception":
            self.register_buffer("mean", torch.tensor(bninception.MEAN_BGR).view(1, 3, 1, 1))
            self.register_buffer("std", torch.ones(1, 3, 1, 1))
        else:
            self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1))
            self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1))

    def _prepare_input(self, images: torch.Tensor) -> torch.Tensor:
        if self.backbone_name == "bninception":
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

    def parameter_groups(self, lr: float, head_lr_mult: float) -> list[dict]:
        """Optimiser groups: the trunk at `lr`, the embedding layer at `lr × head_lr_mult`."""
        trunk = [p for p in self.trunk.parameters() if p.requires_grad]
        return [{"params": trunk, "lr": lr},
                {"params": list(self.head.parameters()), "lr": lr * head_lr_mult}]


def build(model_config: dict) -> EmbeddingNet:
    return EmbeddingNet(
        backbone=model_config["backbone"], embedding_dim=model_config["embedding_dim"],
        pretrained=model_config["pretrained"], pooling=model_config["pooling"],
        frozen_bn=model_config["frozen_bn"], weights_path=model_config.get("weights"),
        normalize=model_config.get("normalize", True),
    )
