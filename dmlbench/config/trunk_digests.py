"""The sha256 of a pretrained timm trunk's weights, recorded before the plan may run it.

A trunk of the catalogue with no published digest on record (`timm_trunks.TRUNKS[...].sha256` is
None) is run pretrained only once its digest is recorded: per run (`model.weights_sha256`), or for
every run of that trunk in the preset's `trunk_sha256: {trunk id: sha256}`, as read on the file's
Hugging Face page. Without it a file of the right tensor names and shapes but random values would
load as "pretrained"; the workflow refuses to start instead (`check_planned`)."""

from __future__ import annotations

from dmlbench.core.errors import ConfigError
from dmlbench.models import timm_trunks


def check_recorded(plan) -> None:
    """The preset's `trunk_sha256`: timm trunk ids only, and never against a digest on record."""
    for backbone, digest in (plan.preset.get("trunk_sha256") or {}).items():
        where = f"preset {plan.name}.trunk_sha256.{backbone}"
        trunk = timm_trunks.TRUNKS.get(backbone)
        if trunk is None:
            raise ConfigError(f"{where}: not a timm trunk; known: {', '.join(sorted(timm_trunks.TRUNKS))}")
        if trunk.sha256 and digest != trunk.sha256:
            raise ConfigError(
                f"{where}: {digest} is not the published {trunk.sha256} of {trunk.model} ({trunk.source}); "
                f"remove the entry or correct it"
            )


def with_recorded(preset: dict, cfg: dict) -> dict:
    """`cfg` with `model.weights_sha256` set from the preset's `trunk_sha256` for a pretrained trunk
    whose run names none (a run's own digest stands)."""
    model = cfg.get("model") or {}
    digest = (preset.get("trunk_sha256") or {}).get(model.get("backbone"))
    if digest and model.get("pretrained") and not model.get("weights_sha256"):
        model["weights_sha256"] = digest
    return cfg


def missing(plan) -> dict[str, list[str]]:
    """{trunk id: the experiments that run it} for every pretrained timm trunk the plan runs with
    no digest on record, none in the run and none in the preset."""
    out: dict[str, list[str]] = {}
    seen = set()
    for run in plan.all_runs():
        key = (run.experiment, run.dataset, run.method, getattr(run, "stage", None))
        if key in seen:
            continue  # its other seeds, folds and trials run the same trunk
        seen.add(key)
        model = plan.resolved(run)["model"]
        trunk = timm_trunks.TRUNKS.get(model["backbone"])
        if trunk is None or not model["pretrained"] or trunk.sha256 or model.get("weights_sha256"):
            continue
        experiments = out.setdefault(model["backbone"], [])
        if run.experiment not in experiments:
            experiments.append(run.experiment)
    return out


def check_planned(plan) -> None:
    """Refuse, before any job, a plan that runs a pretrained timm trunk whose digest nobody recorded."""
    lacking = missing(plan)
    if not lacking:
        return
    pages = "; ".join(
        f"{backbone} ({', '.join(experiments)}): https://huggingface.co/timm/"
        f"{timm_trunks.TRUNKS[backbone].model}/blob/main/model.safetensors"
        for backbone, experiments in sorted(lacking.items())
    )
    entries = ", ".join(f"{backbone}: <sha256>" for backbone in sorted(lacking))
    raise ConfigError(
        f"preset {plan.name}: no sha256 of the weights is on record for {', '.join(sorted(lacking))}, so a "
        f"file of random values with the right shapes would load as pretrained. Read each digest on its "
        f"Hugging Face page (Git LFS details): {pages}; then record them in the preset file or on the "
        f"command line: trunk_sha256: {{{entries}}}, or leave those runs out (subset or experiments)"
    )
