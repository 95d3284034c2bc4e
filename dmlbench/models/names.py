"""The trunks' names as tables and figures print them (ids stay in settings, JSON and CSV)."""

from __future__ import annotations

from dmlbench.models import timm_trunks

PAPER_TRUNKS = {
    "small_cnn": "small CNN",
    "spatial_cnn": "spatial CNN",
    "resnet18": "ResNet-18",
    "resnet50": "ResNet-50",
    "googlenet": "GoogLeNet",
    "bninception": "BN-Inception",
}


def backbone_label(backbone: str) -> str:
    """A timm trunk's label (it names its pretraining), else the network's name."""
    trunk = timm_trunks.TRUNKS.get(backbone)
    return trunk.label if trunk else PAPER_TRUNKS.get(backbone, backbone)


def setting_label(variant: str, sweep_entry: dict) -> str:
    """A sweep setting's name: the trunk's label where the setting is a trunk (suite.modern), else
    the setting's own name (B640, M1024)."""
    backbone = ((sweep_entry.get("train") or {}).get("model") or {}).get("backbone")
    return backbone_label(backbone) if backbone else variant
