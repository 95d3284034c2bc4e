"""The ImageNet and timm weights of the backbones the plan trains with."""

from __future__ import annotations

from pathlib import Path

from dmlbench.doctor.checks import ACTION, OK, Check, Probe


def weights_needed(plan) -> list[tuple[str, str, Path]]:
    """(backbone, url, local path) of the ImageNet weights the plan's runs load from a URL (the
    papers' networks; the timm trunks are `timm_weights_needed`)."""
    from dmlbench.models import weights
    from dmlbench.models.backbones import BACKBONES

    needed = {}
    for run in plan.all_runs():
        model = plan.resolve(run)["model"]
        backbone = BACKBONES.get(model["backbone"])
        if not model["pretrained"] or backbone.weights_url is None:
            continue
        url = backbone.weights_url
        local = backbone.local_weights and model["weights"]
        needed[model["backbone"]] = (url, Path(local) if local else weights.cache_dir() / Path(url).name)
    return [(b, url, path) for b, (url, path) in sorted(needed.items())]


def timmweights_needed(plan) -> list[tuple[str, object, Path, str | None]]:
    """(backbone, its timm entry, local path, the run's `model.weights_sha256`) of every pretrained
    timm trunk the plan's runs load."""
    from dmlbench.models import timm_trunks

    needed = {}
    for run in plan.all_runs():
        model = plan.resolve(run)["model"]
        trunk = timm_trunks.TRUNKS.get(model["backbone"])
        if trunk is None or not model["pretrained"]:
            continue
        path = timm_trunks.local_file(trunk, model["weights"])
        needed[(model["backbone"], path)] = (trunk, model.get("weights_sha256"))
    return [(b, trunk, path, digest) for (b, path), (trunk, digest) in sorted(needed.items(), key=str)]


def timm_weight_checks(plan) -> list[Check]:
    """Each timm trunk's file: where it goes, its expected sha256 and whether the file there has it
    (no hub access: the file is placed by hand)."""
    from dmlbench.core.errors import DmlbenchError
    from dmlbench.models import timm_trunks

    checks = []
    for backbone, trunk, path, user_digest in timmweights_needed(plan):
        try:
            timm_trunks.verified_file(trunk, str(path), user_digest)
            checks.append(Check("weights", backbone, OK, f"{path}: sha256 verified"))
        except DmlbenchError as error:
            checks.append(Check("weights", backbone, ACTION, str(error)))
    return checks


def weight_checks(plan, probes: dict[str, Probe]) -> list[Check]:
    checks = []
    for backbone, url, path in weights_needed(plan):
        if path.exists():
            checks.append(Check("weights", backbone, OK, f"cached: {path}"))
        elif probes[url].ok:
            checks.append(Check("weights", backbone, OK, f"downloadable on first use from {url}"))
        else:
            checks.append(
                Check(
                    "weights",
                    backbone,
                    ACTION,
                    f"{url} {probes[url].detail}: download it elsewhere and place it at {path}",
                )
            )
    return checks + timm_weight_checks(plan)
