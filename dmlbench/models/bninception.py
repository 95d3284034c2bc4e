"""BN-Inception (Ioffe & Szegedy, 2015), with the layer names of the widely used Caffe-converted
ImageNet weights `bn_inception-52deb4733.pth`, so that file loads as it is.

That file expects BGR input in 0-255 with the Caffe means (104, 117, 128) subtracted;
`EmbeddingNet` does this conversion, so the data pipeline stays the same for every backbone.
"""

from __future__ import annotations

import torch
from torch import nn

WEIGHTS_URL = "http://data.lip6.fr/cadene/pretrainedmodels/bn_inception-52deb4733.pth"
WEIGHTS_SHA256 = "52deb473314542a5c2f87e9e6f26f4ca42fe863d15f986414dbae8c2dfdd2353"
MEAN_BGR = (104.0, 117.0, 128.0)

# name: (in, 1x1, 3x3 reduce, 3x3, double reduce, double 3x3, pool kind, pool proj, stride)
BLOCKS = [
    ("3a", 192, 64, 64, 64, 64, 96, "avg", 32, 1),
    ("3b", 256, 64, 64, 96, 64, 96, "avg", 64, 1),
    ("3c", 320, 0, 128, 160, 64, 96, "max", 0, 2),
    ("4a", 576, 224, 64, 96, 96, 128, "avg", 128, 1),
    ("4b", 576, 192, 96, 128, 96, 128, "avg", 128, 1),
    ("4c", 576, 160, 128, 160, 128, 160, "avg", 128, 1),
    ("4d", 608, 96, 128, 192, 160, 192, "avg", 128, 1),
    ("4e", 608, 0, 128, 192, 192, 256, "max", 0, 2),
    ("5a", 1056, 352, 192, 320, 160, 224, "avg", 128, 1),
    ("5b", 1024, 352, 192, 320, 192, 224, "max", 128, 1),
]


class BNInception(nn.Module):
    """The convolutional part of BN-Inception: 3×H×W (BGR, 0-255, mean-subtracted) → 1024 maps."""

    out_features = 1024

    def __init__(self):
        super().__init__()
        self._layer("conv1_7x7_s2", 3, 64, 7, 2, 3)
        self.pool1_3x3_s2 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self._layer("conv2_3x3_reduce", 64, 64, 1)
        self._layer("conv2_3x3", 64, 192, 3, 1, 1)
        self.pool2_3x3_s2 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        for name, cin, c1, r3, c3, rd, cd, pool, proj, stride in BLOCKS:
            p = f"inception_{name}_"
            if c1:
                self._layer(p + "1x1", cin, c1, 1)
            self._layer(p + "3x3_reduce", cin, r3, 1)
            self._layer(p + "3x3", r3, c3, 3, stride, 1)
            self._layer(p + "double_3x3_reduce", cin, rd, 1)
            self._layer(p + "double_3x3_1", rd, cd, 3, 1, 1)
            self._layer(p + "double_3x3_2", cd, cd, 3, stride, 1)
            if stride == 2:
                setattr(self, p + "pool", nn.MaxPool2d(3, stride=2, ceil_mode=True))
            elif pool == "avg":
                setattr(self, p + "pool", nn.AvgPool2d(3, stride=1, padding=1, ceil_mode=True))
            else:
                setattr(self, p + "pool", nn.MaxPool2d(3, stride=1, padding=1, ceil_mode=True))
            if proj:
                self._layer(p + "pool_proj", cin, proj, 1)

    def _layer(self, name: str, cin: int, cout: int, kernel: int, stride: int = 1, padding: int = 0):
        setattr(self, name, nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding))
        setattr(self, name + "_bn", nn.BatchNorm2d(cout, affine=True))

    def _conv_bn_relu(self, name: str, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(getattr(self, name + "_bn")(getattr(self, name)(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool1_3x3_s2(self._conv_bn_relu("conv1_7x7_s2", x))
        x = self._conv_bn_relu("conv2_3x3", self._conv_bn_relu("conv2_3x3_reduce", x))
        x = self.pool2_3x3_s2(x)
        for name, _, c1, _, _, _, _, _, proj, stride in BLOCKS:
            p = f"inception_{name}_"
            branches = []
            if c1:
                branches.append(self._conv_bn_relu(p + "1x1", x))
            branches.append(self._conv_bn_relu(p + "3x3", self._conv_bn_relu(p + "3x3_reduce", x)))
            double = self._conv_bn_relu(p + "double_3x3_reduce", x)
            branches.append(self._conv_bn_relu(p + "double_3x3_2", self._conv_bn_relu(p + "double_3x3_1", double)))
            pooled = getattr(self, p + "pool")(x)
            branches.append(self._conv_bn_relu(p + "pool_proj", pooled) if proj else pooled)
            x = torch.cat(branches, dim=1)
        return x
