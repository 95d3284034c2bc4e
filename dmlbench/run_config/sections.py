"""The sections of a run's settings, one frozen dataclass each, and `TrainingSettings`, all of them:
what an experiment, a method or a preset may change. The resolved run: `resolved`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from dmlbench.run_config.fields import section, setting

BACKBONE_NAMES = (
    "small_cnn",
    "spatial_cnn",
    "resnet18",
    "resnet50",
    "googlenet",
    "bninception",
    "vit_s16_in21k",
    "vit_b16_in21k",
    "vit_s16_dino",
    "vit_b16_dino",
    "dinov2_s14",
    "dinov2_b14",
    "timm_resnet50",
    "vit_tiny_test",
)
SELECTION_METRICS = ("map@r", "r_precision", "recall@1")


@dataclass(frozen=True)
class Model:
    backbone: str = setting(
        "resnet50", "the trunk: the papers' networks or a timm trunk (docs/backbones.md)", enum=list(BACKBONE_NAMES)
    )
    pretrained: bool = setting(True, "the trunk's pretrained weights (ImageNet for the papers' networks)")
    weights: Optional[str] = setting(
        None, "a local weight file (bninception, timm trunks), instead of the cache's", minLength=1
    )
    weights_sha256: Optional[str] = setting(
        None, "timm trunks: the sha256 read on the hub page, where the catalogue has none", pattern="^[0-9a-f]{64}$"
    )
    frozen_patch_embed: bool = setting(False, "timm transformers: the patch embedding keeps its pretrained weights")
    embedding_dim: int = setting(512, "size of the embedding", minimum=1)
    pooling: str = setting("avg", "global pooling before the embedding layer", enum=["avg", "max"])
    frozen_bn: bool = setting(False, "keep the backbone's BatchNorm statistics and parameters fixed")
    normalize: bool = setting(True, "L2-normalise the embeddings the loss sees (false: Sohn's N-pair)")


@dataclass(frozen=True)
class Input:
    resize: int = setting(256, "images are resized to resize × resize", minimum=1)
    crop: int = setting(224, "random crop (train) / centre crop (test)", minimum=1)
    padding: int = setting(0, "zero padding before the random crop (ephn uses 10)", minimum=0)
    flip: bool = setting(True, "random horizontal flip (train)")


@dataclass(frozen=True)
class LossParams:
    optimizer: str = setting(
        "shared",
        "shared: in the run's optimizer at lr × loss_lr_mult | sgd: their own SGD "
        "at `lr` with `momentum` (Wu et al.'s β), no schedule, no decay",
        enum=["shared", "sgd"],
    )
    lr: float = setting(0.1, "sgd only: their learning rate", exclusiveMinimum=0, maximum=10)
    momentum: float = setting(0.9, "sgd only: their momentum", minimum=0, exclusiveMaximum=1)


@dataclass(frozen=True)
class Optimizer:
    name: str = setting(
        "adam",
        "a registered optimiser (dmlbench/training/optimisers.py): adam | adamw | sgd | "
        "rmsprop (PyTorch's: α 0.99, ε 1e-8, `momentum`)",
    )
    lr: float = setting(1.0e-5, "learning rate", exclusiveMinimum=0, maximum=10)
    head_lr_mult: float = setting(1.0, "learning-rate multiplier of the embedding layer", minimum=0)
    layer_decay: float = setting(
        1.0,
        "timm transformers: layer l of L trains at lr × layer_decay^(L − l) (1: off)",
        exclusiveMinimum=0,
        maximum=1,
    )
    clip_grad_norm: Optional[float] = setting(
        None, "the run optimiser's gradients scaled to this total norm at most (null: off)", exclusiveMinimum=0
    )
    loss_lr_mult: float = setting(1.0, "learning-rate multiplier of the loss's own parameters (proxies, β)", minimum=0)
    loss_params: LossParams = section(LossParams, "the loss's own parameters (proxies, centres, margin β)")
    weight_decay: float = setting(0.0, "weight decay", minimum=0)
    momentum: float = setting(0.9, "sgd and rmsprop", minimum=0, exclusiveMaximum=1)
    betas: tuple[float, ...] = setting(
        (0.9, 0.999), "adam and adamw", minItems=2, maxItems=2, items={"minimum": 0, "exclusiveMaximum": 1}
    )


@dataclass(frozen=True)
class Schedule:
    milestones: tuple[int, ...] = setting(
        (), "epochs after which the learning rate is multiplied by gamma", items={"minimum": 0}
    )
    gamma: float = setting(0.1, "the factor at each milestone", exclusiveMinimum=0, maximum=1)


@dataclass(frozen=True)
class Batch:
    size: int = setting(80, "images per batch", minimum=2)
    per_class: int = setting(5, "images per class (m_per_class sampler)", minimum=1)
    small_classes: str = setting(
        "fill",
        "a class with fewer images: fill the batch with more classes (no image "
        "twice) | repeat (top up with repeats, as the ms authors' sampler)",
        enum=["fill", "repeat"],
    )
    per_pair: int = setting(5, "category_pairs sampler: batches per pair of super-categories per epoch", minimum=1)


@dataclass(frozen=True)
class Scheme:
    name: str = setting(
        "plain", "plain: the method's sampler | profs: Algorithm 1 of the profs paper", enum=["plain", "profs"]
    )
    rho: float = setting(6, "profs: uses of each representative per cycle, M = ceil(ρ I L / B)", exclusiveMinimum=0)
    iterations: Optional[int] = setting(None, "profs: M, the iterations of a cycle, fixed (null: from ρ)", minimum=1)
    lam: float = setting(1.0e-3, "profs: λ of the proximal term λ/2 ‖θ − θ(k)‖²", minimum=0)
    hncm: bool = setting(False, "profs: hard negative class mining over the stored representatives")
    representatives: str = setting(
        "images", "profs: images (one per class and cycle) | none (method's batches)", enum=["images", "none"]
    )
    pairs: str = setting(
        "representative",
        "profs: pairs with a representative at either end (lifted, MS) | "
        "anchored: pairs (k_l, j) anchored at the representatives (eq. 4.6) | all",
        enum=["representative", "anchored", "all"],
    )
    anchor: str = setting(
        "cycle_start",
        "profs: θ(k) = parameters at the cycle's start | previous_cycle_start",
        enum=["cycle_start", "previous_cycle_start"],
    )


@dataclass(frozen=True)
class EarlyStopping:
    patience: Optional[int] = setting(
        None,
        "stop after this many evaluated epochs without a better `metric`, keep "
        "the best epoch's model (null: train every epoch)",
        minimum=1,
    )
    metric: str = setting(
        "map@r",
        "the metric of model selection on the run's evaluation split (the fair protocol's validation fold)",
        enum=list(SELECTION_METRICS),
    )


@dataclass(frozen=True)
class Eval:
    ks: tuple[int, ...] = setting((1, 2, 4, 8, 16, 32), "the K of Recall@K", minItems=1, items={"minimum": 1})
    every: int = setting(0, "also evaluate Recall@K every N epochs (0: only at the end)", minimum=0)
    batch_size: int = setting(128, "images per forward pass when embedding", minimum=1)
    kmeans_restarts: int = setting(1, "k-means runs for NMI/F1; the best objective is kept", minimum=1)
    trunk_feature: bool = setting(
        False,
        "also evaluate the trunk's pooled feature after training, the head removed "
        "(as Sph-ViT's authors report their ViTs)",
    )
    vehicleid_protocol: str = setting(
        "all_vs_all",
        "all_vs_all (DML papers) | one_gallery_per_vehicle (re-id, 10 draws)",
        enum=["all_vs_all", "one_gallery_per_vehicle"],
    )


@dataclass(frozen=True)
class Loader:
    workers: int = setting(4, "data-loading worker processes", minimum=0)
    pin_memory: bool = setting(True, "page-locked host memory and non-blocking copies (GPU only; same numbers)")
    persistent_workers: bool = setting(False, "keep loader workers alive between epochs")


@dataclass(frozen=True)
class Performance:
    bf16: bool = setting(False, "bfloat16 autocast of the forward pass (GPU; changes numbers)")
    channels_last: bool = setting(False, "channels-last memory format for the network (may change the last bits)")
    tf32: bool = setting(False, "TensorFloat-32 matrix products and convolutions on CUDA (faster; not fp32)")


@dataclass(frozen=True)
class Probe:
    epochs: tuple[int, ...] = setting(
        (),
        "after these epochs: where SGD steps of a model copy move the mined triplets on the scatter diagram (ephn.f3)",
        items={"minimum": 0},
    )
    steps: int = setting(146, "SGD steps of the copy (2 epochs of 73 batches, as in the paper)", minimum=1)
    lr: float = setting(1.0e-6, "the copy's learning rate", exclusiveMinimum=0)


@dataclass(frozen=True)
class Record:
    scatter_epochs: tuple[int, ...] = setting(
        (),
        "after these epochs (0 = before training): closest positive/"
        "negative similarity of every training image (ephn.f6)",
        items={"minimum": 0},
    )
    probe: Probe = section(Probe, "the probe of ephn.f3")


@dataclass(frozen=True)
class Keep:
    checkpoint: bool = setting(
        False, "checkpoint.pt (the state to resume), removed once model.pt and the final metrics exist"
    )
    fold_model: bool = setting(
        False,
        "fair protocol: a fold training's model.pt (its validation.json, and "
        "test.npz for a final run, hold what the summary reads)",
    )
    checkpoint_minutes: float = setting(
        0,
        "write the checkpoint at most every N minutes (0: after every epoch); "
        "a stop (error, Ctrl-C, SIGTERM) writes the last finished epoch's; "
        "a SIGKILL loses at most N minutes",
        minimum=0,
    )


@dataclass(frozen=True)
class Tracking:
    tensorboard: bool = setting(True, "event files in <run>/tensorboard (loss, per-epoch metrics, learning rates)")
    mlflow: Optional[str] = setting(
        None,
        "MLflow tracking URI (http://127.0.0.1:5000, sqlite:///mlflow.db, …): "
        "parameters, per-epoch and final metrics, model.pt",
        pattern="^(https?://|file:|sqlite:|postgresql|mysql|databricks)",
    )


@dataclass(frozen=True)
class TrainingSettings:
    """Every setting an experiment, a method or a preset may change (`train`, `overrides`)."""

    model: Model = section(Model, "the network")
    input: Input = section(Input, "image size and augmentation")
    optimizer: Optimizer = section(Optimizer, "the optimiser and its learning rates")
    schedule: Schedule = section(Schedule, "the learning-rate schedule (multi-step)")
    batch: Batch = section(Batch, "batch composition")
    scheme: Scheme = section(Scheme, "how iterations build their batches and what they add (dmlbench/training/schemes)")
    epochs: int = setting(50, "training epochs", minimum=1)
    batches_per_epoch: Optional[int] = setting(None, "null: training images // batch size", minimum=1)
    early_stopping: EarlyStopping = section(EarlyStopping, "model selection on the run's evaluation split")
    eval: Eval = section(Eval, "evaluation")
    loader: Loader = section(Loader, "data loading (no effect on numbers)")
    performance: Performance = section(Performance, "GPU speed options")
    record: Record = section(Record, "what a run records about its triplets (dmlbench/training/recording.py)")
    device: str = setting("auto", "auto | cpu | cuda[:N]", pattern="^(auto|cpu|cuda(:[0-9]+)?)$")
    keep: Keep = section(Keep, "what a finished run keeps besides model.pt and its metrics (no effect on numbers)")
    tracking: Tracking = section(
        Tracking, "where a run reports while it trains (no effect on numbers; failures only logged)"
    )
