"""Today's trunks through timm (ViT, DINO, DINOv2, timm's ResNet-50), with
their input convention, the feature they hand to the embedding layer, and their pretrained file.

No hub access at run time: a pretrained trunk reads `model.safetensors` from a local file
(`model.weights`, or `<torch hub dir>/checkpoints/timm/<timm name>.safetensors`), verified by the
sha256 that the Hugging Face Hub publishes for it before timm reads it. Only safetensors files are
read (no pickle is ever loaded), and timm's own checkpoint filter adapts the file to the built
network (DINOv2's position embeddings resampled from 518 to the built 224 pixels)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from dmlbench.core.errors import ConfigError, DmlbenchError
from dmlbench.run_config import RunConfig


@dataclass(frozen=True)
class TimmTrunk:
    """`model`: timm's name with its pretrained tag; `sha256`: the published digest of the hub
    repository's `model.safetensors` (None: no digest on record, so no pretrained use until one is
    recorded, `config.trunk_digests`);
    `source`: where that digest was read; `img_size`: the side the network is built for (None:
    timm's own); `cls_token`: the embedding layer takes the CLS token after the final norm, else
    the feature maps are pooled by the embedding net (`model.pooling`); `mean`, `std`,
    `interpolation`, `native_size`: the input convention of the weights (timm's
    `resolve_data_config`, tested); `pretraining` and `overlap`: what the weights were trained on
    and what that data is known to hold of the four retrieval datasets; `label`: its name in
    tables and figures."""

    model: str
    sha256: str | None
    source: str
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    native_size: int
    interpolation: str = "bicubic"
    img_size: int | None = None
    cls_token: bool = True
    pretraining: str = ""
    overlap: str = ""
    label: str = ""

    @property
    def file_name(self) -> str:
        return f"{self.model}.safetensors"

    @property
    def hub_url(self) -> str:
        return f"https://huggingface.co/timm/{self.model}/resolve/main/model.safetensors"


IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
INCEPTION = ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))


def local_file(trunk: TimmTrunk, weights_path: str | None) -> Path:
    """Where the trunk's weights are read from: `model.weights`, else the timm folder of torch's
    checkpoint cache."""
    if weights_path:
        return Path(weights_path)
    from dmlbench.models.weights import cache_dir

    return cache_dir() / "timm" / trunk.file_name


def expected_digest(trunk: TimmTrunk, user_digest: str | None) -> str:
    """The sha256 the file must have: the catalogue's published one, else the one the user read on
    the hub page (`model.weights_sha256`); both given, they must agree."""
    page = f"https://huggingface.co/timm/{trunk.model}/blob/main/model.safetensors"
    if trunk.sha256 and user_digest and user_digest != trunk.sha256:
        raise DmlbenchError(
            f"model.weights_sha256 {user_digest} is not the published {trunk.sha256} of "
            f"{trunk.model} ({trunk.source}); remove the setting or correct it"
        )
    if trunk.sha256 or user_digest:
        return trunk.sha256 or user_digest
    raise DmlbenchError(
        f"{trunk.model}: no published sha256 of its weights is on record here. Read it on "
        f"{page} (Git LFS details) and set model.weights_sha256 to it (one run) or record it in "
        f"the preset's trunk_sha256 (every run of the trunk), or use model.pretrained: false"
    )


def verified_file(trunk: TimmTrunk, weights_path: str | None, user_digest: str | None = None) -> Path:
    """The local weights file, checked before anything reads it: present, a safetensors file, and of
    the expected sha256 (`expected_digest`)."""
    path = local_file(trunk, weights_path)
    try:
        digest_wanted = expected_digest(trunk, user_digest)
    except DmlbenchError as error:
        raise DmlbenchError(
            f"{error}. The file itself: {trunk.hub_url}, placed at {path}{'' if path.exists() else ' (not there yet)'}"
        ) from None
    if not path.exists():
        raise DmlbenchError(
            f"{path}: the weights of {trunk.model} are not there. Download {trunk.hub_url} "
            f"(sha256 {digest_wanted}) and place it at {path}, or set model.weights to its "
            f"path (`python -m dmlbench doctor` lists every file the plan needs)."
        )
    if path.suffix != ".safetensors":
        raise DmlbenchError(
            f"{path}: only safetensors weights are read (a pickled file is never "
            f"loaded); use the hub's model.safetensors of {trunk.model}"
        )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != digest_wanted:
        raise DmlbenchError(
            f"{path}: sha256 {digest} is not the expected {digest_wanted} of {trunk.model} "
            f"(left untouched). Place an intact copy of {trunk.hub_url} there."
        )
    return path


def overlap_note(backbones) -> str:
    """One sentence per pretrained timm trunk among `backbones`: its pretraining data and what that
    data is known to hold of the retrieval datasets (shown under each table of its runs)."""
    trunks = [TRUNKS[b] for b in dict.fromkeys(backbones) if b in TRUNKS]
    if not trunks:
        return ""
    return "Pretraining data of each trunk, and what it is known to hold of the datasets: " + " ".join(
        f"{t.label}: {t.pretraining}; {t.overlap}." for t in trunks
    )


def check_settings(cfg: RunConfig, where: str) -> None:
    """The model and optimiser settings that only some trunks read, refused elsewhere."""
    backbone = cfg.model.backbone
    if cfg.model.weights and backbone != "bninception" and backbone not in TRUNKS:
        raise ConfigError(f"{where}: model.weights is read for bninception and the timm trunks only, not {backbone}")
    if cfg.model.weights_sha256 and backbone not in TRUNKS:
        raise ConfigError(f"{where}: model.weights_sha256 is read for the timm trunks only, not {backbone}")
    transformer = backbone in TRUNKS and TRUNKS[backbone].cls_token
    if cfg.optimizer.layer_decay != 1.0 and not transformer:
        raise ConfigError(
            f"{where}: optimizer.layer_decay needs a timm transformer (its blocks are the layers), not {backbone}"
        )
    if cfg.model.frozen_patch_embed and not transformer:
        raise ConfigError(f"{where}: model.frozen_patch_embed needs a timm transformer, not {backbone}")


def create(trunk: TimmTrunk, pretrained: bool, weights_path: str | None, user_digest: str | None = None):
    """timm's network without its classifier: pooled to the CLS token after the final norm
    (`cls_token`), else returning its feature maps. ViTs are built with `dynamic_img_size` and
    `dynamic_img_pad` (an input side not a multiple of the patch is padded), so
    the preflight's shrunk crops and any `input.crop` run."""
    import timm

    options = {"num_classes": 0}
    if trunk.cls_token:
        options.update(global_pool="token", dynamic_img_size=True, dynamic_img_pad=True)
    else:
        options.update(global_pool="")
    if trunk.img_size:
        options["img_size"] = trunk.img_size
    if not pretrained:
        return timm.create_model(trunk.model, pretrained=False, **options)
    path = verified_file(trunk, weights_path, user_digest)
    expected = set(timm.create_model(trunk.model, pretrained=False, **options).state_dict())
    missing = sorted(expected - tensor_names(path))
    if missing:  # timm loads a trunk without a classifier non-strictly: a run labelled pretrained would be random
        raise DmlbenchError(
            f"{path} lacks {len(missing)} of the {len(expected)} tensors of {trunk.model} "
            f"({', '.join(missing[:3])}{' …' if len(missing) > 3 else ''}): it holds other "
            f"weights. Place {trunk.hub_url} there"
        )
    net = timm.create_model(trunk.model, pretrained=True, pretrained_cfg_overlay={"file": str(path)}, **options)
    varied = [t for t in net.state_dict().values() if t.is_floating_point() and t.numel() > 1 and t.max() > t.min()]
    if not varied:  # zeros, or one value throughout: no training made these, whatever digest was set for them
        raise DmlbenchError(
            f"{path}: every tensor of {trunk.model} holds a single value (zeros or a constant): not trained "
            f"weights. Place {trunk.hub_url} there"
        )
    return net


def tensor_names(path: Path) -> set[str]:
    """The tensors a safetensors file holds (its header alone is read); a file that is not one,
    or is cut short, is refused naming it."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as handle:
            return set(handle.keys())
    except SafetensorError as error:
        raise DmlbenchError(
            f"{path} is not a readable safetensors file ({' '.join(str(error).split())[:160]}); "
            f"it may be cut short: place an intact copy there"
        ) from None


# `sha256`: read on the file's Hugging Face "Git LFS Details" page (`source`, 2026-11-26); None
# where no such page was at hand, and then the run must name the digest the user read on the hub
# page (`model.weights_sha256`). Pretraining data and overlap: the model cards and papers named.
IN21K_OVERLAP = (
    "CUB's authors warn that its images overlap ImageNet's (22 of CUB's 5,794 test images "
    "reported in ImageNet-1k, part of ImageNet-21k, by the Spatial Transformer Networks "
    "authors); no audit known for Cars, SOP, In-Shop"
)
IN1K_OVERLAP = (
    "CUB's images overlap ImageNet-1k's (22 of its 5,794 test images reported there by the "
    "Spatial Transformer Networks authors); "
    "no audit known for Cars, SOP, In-Shop"
)
DINOV2_OVERLAP = (
    "LVD-142M was retrieved with CUB-200-2011's and Stanford Cars' official training sets as "
    "queries, 1M images each (DINOv2 paper, Tables 15 and 18); only the official test sets were "
    "deduplicated against, so DML's test classes (CUB 101-200, Cars 99-196, which include "
    "official training images) may have near neighbours in it; SOP and In-Shop were not queries"
)
TRUNKS: dict[str, TimmTrunk] = {
    "vit_s16_in21k": TimmTrunk(
        "vit_small_patch16_224.augreg_in21k",
        None,
        "",
        *INCEPTION,
        native_size=224,
        pretraining="ImageNet-21k, supervised (AugReg, arXiv 2106.10270)",
        overlap=IN21K_OVERLAP,
        label="ViT-S/16 (ImageNet-21k)",
    ),
    "vit_b16_in21k": TimmTrunk(
        "vit_base_patch16_224.augreg_in21k",
        None,
        "",
        *INCEPTION,
        native_size=224,
        pretraining="ImageNet-21k, supervised (AugReg, arXiv 2106.10270)",
        overlap=IN21K_OVERLAP,
        label="ViT-B/16 (ImageNet-21k)",
    ),
    "vit_s16_dino": TimmTrunk(
        "vit_small_patch16_224.dino",
        None,
        "",
        *IMAGENET,
        native_size=224,
        pretraining="ImageNet-1k without labels (DINO, arXiv 2104.14294)",
        overlap=IN1K_OVERLAP,
        label="ViT-S/16 (DINO)",
    ),
    "vit_b16_dino": TimmTrunk(
        "vit_base_patch16_224.dino",
        "93181583427d6de3e18ab0e6ee4df35736cfc51a3c1bf9ae0e9b53b1316598dc",
        "https://huggingface.co/timm/vit_base_patch16_224.dino/blob/refs%2Fpr%2F2/model.safetensors "
        "(the file unchanged on main since 9578d38)",
        *IMAGENET,
        native_size=224,
        pretraining="ImageNet-1k without labels (DINO, arXiv 2104.14294)",
        overlap=IN1K_OVERLAP,
        label="ViT-B/16 (DINO)",
    ),
    "dinov2_s14": TimmTrunk(
        "vit_small_patch14_dinov2.lvd142m",
        None,
        "",
        *IMAGENET,
        native_size=518,
        img_size=224,
        pretraining="LVD-142M, self-supervised (DINOv2, arXiv 2304.07193)",
        overlap=DINOV2_OVERLAP,
        label="DINOv2 ViT-S/14",
    ),
    "dinov2_b14": TimmTrunk(
        "vit_base_patch14_dinov2.lvd142m",
        "55cbb5d887b336d430e649c277b85a1429e724871f9d02ac16203235886d8c7b",
        "https://huggingface.co/timm/vit_base_patch14_dinov2.lvd142m/blob/main/model.safetensors",
        *IMAGENET,
        native_size=518,
        img_size=224,
        pretraining="LVD-142M, self-supervised (DINOv2, arXiv 2304.07193)",
        overlap=DINOV2_OVERLAP,
        label="DINOv2 ViT-B/14",
    ),
    "timm_resnet50": TimmTrunk(
        "resnet50.a1_in1k",
        "773525d5821de224f8f30c33377b7a795d7863e08522698200d3217d3f2a41bb",
        "https://huggingface.co/timm/resnet50.a1_in1k/blob/5d9e13b8fdab4d9718bcf2c8f5c3af01878367e8/"
        "model.safetensors (main changed only README.md since)",
        *IMAGENET,
        native_size=224,
        cls_token=False,
        pretraining="ImageNet-1k, supervised (ResNet strikes back A1, arXiv 2110.00476)",
        overlap=IN1K_OVERLAP,
        label="ResNet-50 (timm A1)",
    ),
    "vit_tiny_test": TimmTrunk(
        "test_vit.r160_in1k",
        None,
        "",
        *INCEPTION,
        native_size=160,
        pretraining="none: timm's smallest ViT, used with random initialisation (CPU presets, tests)",
        overlap="none (random initialisation)",
        label="tiny test ViT (random init)",
    ),
}
