"""The trunks an embedding network can stand on, by name (`model.backbone`): the papers'
ImageNet networks (BN-Inception, GoogLeNet, ResNet-18/50), today's trunks through timm (ViT,
DINO, DINOv2; `dmlbench.models.timm_trunks`) and two small CPU networks. Each entry builds
the trunk (its feature maps, not pooled), says where its weights come from and which input its
weights expect."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from torch import nn

from dmlbench.core.errors import ConfigError
from dmlbench.models import bninception, timm_trunks, weights
from dmlbench.core.registry import Registry

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class Backbone:
    """`build(pretrained, weights_path, weights_sha256)` → (trunk, width of its feature maps); `weights_url`: its
    ImageNet weights (None: never pretrained); `caffe_input`: the weights expect BGR 0-255 minus
    Caffe's means (BN-Inception), else RGB normalised by `mean` and `std`; `local_weights`:
    `model.weights` may name a local copy of the file; `timm`: a trunk from timm (its weights are
    a local safetensors file of a published sha256, never downloaded at run time)."""

    build: Callable[[bool, str | None, str | None], tuple[nn.Module, int]]
    weights_url: str | None = None
    caffe_input: bool = False
    local_weights: bool = False
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    timm: timm_trunks.TimmTrunk | None = None


BACKBONES = Registry("backbone", error=ConfigError)


class SmallCNN(nn.Module):
    """Four conv-BN-ReLU blocks for CPU presets (no pretrained weights)."""

    out_features = 128

    def __init__(self):
        super().__init__()
        layers, channels = [], 3
        for width in (32, 64, 128, 128):
            layers += [
                nn.Conv2d(channels, width, 3, padding=1),
                nn.BatchNorm2d(width),
                nn.ReLU(),
                nn.MaxPool2d(2, ceil_mode=True),
            ]
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
            layers += [
                nn.Conv2d(channels, width, 3, padding=1),
                nn.BatchNorm2d(width),
                nn.ReLU(),
                nn.MaxPool2d(2, ceil_mode=True),
            ]
            channels = width
        self.features = nn.Sequential(
            *layers, nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(channels * 16, self.out_features), nn.ReLU()
        )

    def forward(self, x):
        return self.features(x)[:, :, None, None]


# name → (torchvision's weights enum, the URL of its IMAGENET1K_V1 file; a test compares them).
# torchvision is imported only when one of these is built: importing it costs a process 2-3 s.
TORCHVISION = {
    "resnet18": ("ResNet18_Weights", "https://download.pytorch.org/models/resnet18-f37072fd.pth"),
    "resnet50": ("ResNet50_Weights", "https://download.pytorch.org/models/resnet50-0676ba61.pth"),
    "googlenet": ("GoogLeNet_Weights", "https://download.pytorch.org/models/googlenet-1378be20.pth"),
}


def _torchvision_trunk(name: str, pretrained: bool, weights_path: str | None = None) -> tuple[nn.Module, int]:
    """A torchvision ImageNet model without its classifier (and, for GoogLeNet, its pooling), and
    the width of its feature maps. `weights_path` is not read: torchvision's cache holds the file."""
    import torchvision

    builder, enum = getattr(torchvision.models, name), getattr(torchvision.models, TORCHVISION[name][0]).IMAGENET1K_V1
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


def _bninception_trunk(pretrained: bool, weights_path: str | None, _digest=None) -> tuple[nn.Module, int]:
    trunk = bninception.BNInception()
    if pretrained:
        state = weights.load_checked(bninception.WEIGHTS_URL, bninception.WEIGHTS_SHA256, weights_path)
        trunk.load_state_dict({k: v for k, v in state.items() if not k.startswith("last_linear")})
    return trunk, bninception.BNInception.out_features


def _small(network) -> Callable[[bool, str | None, str | None], tuple[nn.Module, int]]:
    """A CPU-sized network: random initialisation whatever `pretrained` says."""
    return lambda pretrained, weights_path, digest: (network(), network.out_features)


BACKBONES.register("small_cnn")(Backbone(_small(SmallCNN)))
BACKBONES.register("spatial_cnn")(Backbone(_small(SpatialCNN)))
BACKBONES.register("bninception")(
    Backbone(_bninception_trunk, bninception.WEIGHTS_URL, caffe_input=True, local_weights=True)
)
for _name, (_, _url) in TORCHVISION.items():
    BACKBONES.register(_name)(
        Backbone(lambda pretrained, path, digest, name=_name: _torchvision_trunk(name, pretrained), _url)
    )


class _ClsToken(nn.Module):
    """A timm transformer pooled to its CLS token, shaped as a 1 × 1 map (the embedding net's
    global pooling then leaves it as it is)."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)[:, :, None, None]


def _timm_trunk(
    trunk: timm_trunks.TimmTrunk, pretrained: bool, weights_path: str | None, digest: str | None
) -> tuple[nn.Module, int]:
    """A timm trunk (`dmlbench.models.timm_trunks`) and the width of what it hands on."""
    net = timm_trunks.create(trunk, pretrained, weights_path, digest)
    return (_ClsToken(net) if trunk.cls_token else net), net.num_features


for _name, _trunk in timm_trunks.TRUNKS.items():
    BACKBONES.register(_name)(
        Backbone(
            lambda pretrained, path, digest, trunk=_trunk: _timm_trunk(trunk, pretrained, path, digest),
            local_weights=True,
            mean=_trunk.mean,
            std=_trunk.std,
            timm=_trunk,
        )
    )
