"""`python -m dmlbench doctor`: what a new machine has and lacks for a plan, in under a minute.

Checks, without training anything: Python, torch, CUDA devices, faiss (GPU build or not),
snakemake (and the SLURM executor plugin when the SLURM profile is meant); per dataset of the
plan: prepared and valid, files present, a source that answers (one HEAD or one-byte range request
per source, short timeout), or what to do by hand; the ImageNet weights of the backbones the plan
trains with; free disk against what the missing datasets need. Ends with one table, and a
non-zero exit when something blocks the plan.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
import shutil
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from dmlbench import machine
from dmlbench.data import acquire, datasets, manifest, store
from dmlbench.errors import DmlbenchError

OK, ACTION, INFO = "OK", "action needed", "info"
WEIGHTS_GB = 0.3


@dataclass(frozen=True)
class Check:
    area: str
    item: str
    status: str
    detail: str


@dataclass(frozen=True)
class Probe:
    """What one source answered: `ok`, and whether the failure was the network's (no answer)."""

    ok: bool
    detail: str
    no_answer: bool = False


def probe_url(url: str, timeout: float = 5.0) -> Probe:
    """One request that fetches at most one byte: does the source serve a file?"""
    request = urllib.request.Request(url, headers={"Range": "bytes=0-0"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            kind = response.headers.get("Content-Type", "") if response.headers else ""
            if "text/html" in kind:
                return Probe(False, "answers with an HTML page, not the file")
            return Probe(True, "answers")
    except urllib.error.HTTPError as error:
        return Probe(False, f"HTTP {error.code}")
    except (urllib.error.URLError, OSError, TimeoutError) as error:
        return Probe(False, f"no answer ({getattr(error, 'reason', error)})", no_answer=True)


# --- the machine -----------------------------------------------------------------------------

def environment(slurm: bool, needs_gpu: bool) -> list[Check]:
    import torch

    checks = [Check("machine", "python", OK, platform.python_version()),
              Check("machine", "torch", OK, f"{torch.__version__} (CUDA build {torch.version.cuda})")]
    if torch.cuda.is_available():
        names = [f"{i}: {torch.cuda.get_device_name(i)}, "
                 f"{torch.cuda.get_device_properties(i).total_memory / 2**30:.0f} GiB"
                 for i in range(torch.cuda.device_count())]
        checks.append(Check("machine", "CUDA devices", OK, "; ".join(names)))
    else:
        checks.append(Check("machine", "CUDA devices", ACTION if needs_gpu else INFO,
                            "none visible" + (": this plan trains on GPUs (the CPU presets are demo "
                                              "and smoke)" if needs_gpu else "; this plan runs on CPU")))
    checks.append(_faiss())
    checks.append(_package("snakemake", "snakemake", required=True))
    if slurm:
        checks.append(_package("snakemake-executor-plugin-slurm", "snakemake_executor_plugin_slurm",
                               required=True, hint="pip install -e '.[slurm]'"))
    return checks


def _faiss() -> Check:
    try:
        import faiss
    except ImportError:
        return Check("machine", "faiss", ACTION, "not installed: pip install faiss-cpu (or faiss-gpu)")
    gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
    build = f"GPU build, {gpus} device(s)" if gpus else "CPU build (search and k-means on CPU)"
    return Check("machine", "faiss", OK, f"{faiss.__version__}, {build}")


def _package(distribution: str, module: str, required: bool, hint: str = "") -> Check:
    if importlib.util.find_spec(module) is None:
        return Check("machine", distribution, ACTION if required else INFO,
                     f"not installed{': ' + hint if hint else ''}")
    return Check("machine", distribution, OK, importlib.metadata.version(distribution))


# --- datasets ----------------------------------------------------------------------------------

def _prepared(plan, name: str) -> Check | None:
    path = Path(plan.data_dir) / name / "manifest.csv"
    if not path.exists():
        return None
    spec = datasets.get(name)
    try:
        table = manifest.read(path)
        if plan.preset["data"]["source"] == "real":
            manifest.check(table, spec.expected, spec.title)
    except DmlbenchError as error:
        return Check("dataset", name, ACTION, f"{path} is not valid ({error}); delete it and rerun prepare")
    return Check("dataset", name, OK, f"prepared: {path} ({len(table):,} images)")


def _user_folder(spec, given: Path) -> Check:
    """OK only when `data.paths.<id>` holds the dataset: a layout's files of the published size,
    or an extracted dataset whose lists parse into the expected split."""
    name, key = spec.name, f"data.paths.{spec.name} = {given}"
    wanted = "; or ".join(" + ".join(f.filename for f in layout.files) for layout in spec.layouts)
    if not given.exists():
        return Check("dataset", name, ACTION, f"{key} does not exist")
    if not given.is_dir():
        return Check("dataset", name, ACTION, f"{key} is a file; point it at a folder holding {wanted}, "
                                              f"or the extracted dataset")
    layout = acquire.complete_layout(spec, given)
    if layout is not None:
        wrong = [f"{f.filename} ({(given / f.filename).stat().st_size:,} bytes, published {f.size:,})"
                 for f in layout.files if f.size is not None and (given / f.filename).stat().st_size != f.size]
        if wrong:
            return Check("dataset", name, ACTION, f"{key}: {', '.join(wrong)}: not the published file; "
                                                  f"replace it with an intact copy")
        return Check("dataset", name, OK, f"data.paths.{name}: the {layout.name} files in {given}; "
                                          f"prepare checks their checksums" + _pinning(layout, given))
    try:
        table = spec.parse(given)
        manifest.check(table, spec.expected, spec.title)
    except DmlbenchError as error:
        return Check("dataset", name, ACTION, f"{key} holds neither the files of a layout ({wanted}) "
                                              f"nor the extracted dataset ({error})")
    except OSError as error:
        return Check("dataset", name, ACTION, f"{key} cannot be read ({error})")
    return Check("dataset", name, OK, f"data.paths.{name}: the extracted dataset in {given} "
                                      f"({len(table):,} images listed)")


def _local(plan, name: str) -> Check | None:
    spec = datasets.get(name)
    user = plan.preset["data"]["paths"].get(name)
    if user:
        return _user_folder(spec, Path(user).expanduser())
    folder = Path(plan.preset["data"]["root"]) / "downloads" / name
    layout = acquire.complete_layout(spec, folder)
    if layout is None:
        return None
    wrong = [f.filename for f in layout.files
             if f.size is not None and (folder / f.filename).stat().st_size != f.size]
    if wrong:
        return Check("dataset", name, ACTION, f"{', '.join(wrong)} in {folder} do not have the "
                                              f"published size: replace them")
    return Check("dataset", name, OK, f"the {layout.name} files are in {folder}; prepare extracts them"
                                      + _pinning(layout, folder))


def _pinning(layout, folder: Path) -> str:
    """What checks the files that have no published sha256: the digest of their first copy."""
    unpublished = [f.filename for f in layout.files if not f.sha256]
    if not unpublished:
        return ""
    pinned = [n for n in unpublished if acquire.pin_path(folder / n).exists()]
    waiting = [n for n in unpublished if n not in pinned]
    return ("; no published sha256 for " + ", ".join(unpublished) + ": "
            + (f"checked against the digest recorded at first use ({', '.join(pinned)})" if pinned else "")
            + ("; " if pinned and waiting else "")
            + (f"recorded at first use ({', '.join(waiting)})" if waiting else ""))


def _sources(spec, probes: dict[str, Probe], folder: Path) -> Check:
    """The first layout whose every file has a source that answers, or what was tried."""
    manual = spec.manual.format(folder=folder) if spec.manual else "Download " + " and ".join(
        f"{f.filename} ({f.urls[0]})" for f in spec.files) + f" elsewhere and put it in {folder}."
    urls = [url for layout in spec.layouts for f in layout.files for url in f.urls]
    if urls and all(probes[url].no_answer for url in urls):
        return Check("dataset", spec.name, ACTION, f"sources not checked (no network). {manual}")
    for layout in spec.layouts:
        live = [next((u for u in f.urls if probes[u].ok), None) for f in layout.files]
        if layout.files and all(live):
            return Check("dataset", spec.name, OK, f"downloadable ({layout.name}, e.g. {live[0]})")
    tried = "; ".join(f"{url}: {probes[url].detail}" for url in urls)
    return Check("dataset", spec.name, ACTION,
                 (f"no source answers ({tried}). " if tried else "") + manual)


def dataset_checks(plan, probes: dict[str, Probe]) -> list[Check]:
    checks = []
    for name in plan.datasets:
        spec = datasets.get(name)
        if spec.write_shipped or plan.preset["data"]["source"] == "fixture":
            checks.append(Check("dataset", name, OK, "made on the machine (fixture or shipped)"))
            continue
        found = _prepared(plan, name) or _local(plan, name)
        if found is not None:
            checks.append(found)
        elif not plan.preset["data"]["download"]:
            checks.append(Check("dataset", name, ACTION, "missing and data.download is false: put its "
                                                         "files in data/downloads/" + name))
        else:
            checks.append(_sources(spec, probes, Path(plan.preset["data"]["root"]) / "downloads" / name))
    return checks


def urls_to_probe(plan) -> list[str]:
    """Every source of every dataset the plan still has to download, and missing weights."""
    urls = []
    if plan.preset["data"]["source"] == "real" and plan.preset["data"]["download"]:
        for name in plan.datasets:
            if datasets.get(name).write_shipped or _prepared(plan, name) or _local(plan, name):
                continue
            urls += [u for layout in datasets.get(name).layouts for f in layout.files for u in f.urls]
    urls += [url for _, url, path in _weights_needed(plan) if not path.exists()]
    return list(dict.fromkeys(urls))


# --- weights and disk --------------------------------------------------------------------------

def _weights_needed(plan) -> list[tuple[str, str, Path]]:
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


def timm_weights_needed(plan) -> list[tuple[str, object, Path, str | None]]:
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
    from dmlbench.errors import DmlbenchError
    from dmlbench.models import timm_trunks

    checks = []
    for backbone, trunk, path, user_digest in timm_weights_needed(plan):
        try:
            timm_trunks.verified_file(trunk, str(path), user_digest)
            checks.append(Check("weights", backbone, OK, f"{path}: sha256 verified"))
        except DmlbenchError as error:
            checks.append(Check("weights", backbone, ACTION, str(error)))
    return checks


def weight_checks(plan, probes: dict[str, Probe]) -> list[Check]:
    checks = []
    for backbone, url, path in _weights_needed(plan):
        if path.exists():
            checks.append(Check("weights", backbone, OK, f"cached: {path}"))
        elif probes[url].ok:
            checks.append(Check("weights", backbone, OK, f"downloadable on first use from {url}"))
        else:
            checks.append(Check("weights", backbone, ACTION,
                                f"{url} {probes[url].detail}: download it elsewhere and place it at {path}"))
    return checks + timm_weight_checks(plan)


def store_gb(plan, dataset: str) -> float:
    """GB of the decoded-image stores of `dataset`: one per input resize its runs use."""
    if not plan.preset["data"].get("store"):
        return 0.0
    rows = sum(datasets.get(dataset).expected.images.values())
    sides = {plan.resolve(run)["input"]["resize"] for run in plan.all_runs() if run.dataset == dataset}
    return round(sum(store.size_bytes(rows, side) for side in sides) / 1e9, 1)


def disk_check(plan, checks: list[Check], free_bytes: int | None = None) -> Check:
    """Free space at the data root against the datasets (and weights) still to fetch."""
    missing = [c.item for c in checks if c.area == "dataset" and not c.detail.startswith("prepared")
               and c.detail != "made on the machine (fixture or shipped)"]
    need = {name: datasets.get(name).disk_gb + store_gb(plan, name) for name in missing}
    weights_gb = WEIGHTS_GB * sum(1 for c in checks if c.area == "weights" and not c.detail.startswith("cached"))
    total = sum(need.values()) + weights_gb
    root = Path(plan.preset["data"]["root"])
    probe_at = next((p for p in [root, *root.absolute().parents] if p.exists()), Path("."))
    free = shutil.disk_usage(probe_at).free if free_bytes is None else free_bytes
    listed = ", ".join(f"{k} {v:g} GB" for k, v in need.items()) or "nothing to fetch"
    detail = (f"{free / 1e9:.1f} GB free at {probe_at}; the plan still needs about {total:.1f} GB "
              f"({listed}{f', weights {weights_gb:.1f} GB' if weights_gb else ''}; archives + "
              f"extracted images + cache{' + decoded-image stores' if plan.preset['data'].get('store') else ''})")
    return Check("disk", str(probe_at), OK if free >= total * 1e9 else ACTION, detail)


def results_disk_check(plan, free_bytes: int | None = None) -> Check:
    """Free space where `results/` lives against what the plan's finished trainings keep
    (`dmlbench.preflight.disk`)."""
    from dmlbench.preflight import disk

    need = disk.plan_need(plan).sort_values("gb", ascending=False)
    total = float(need["gb"].sum())
    folder = Path("results")
    probe_at = next((p for p in [folder, *folder.absolute().parents] if p.exists()), Path("."))
    free = shutil.disk_usage(probe_at).free if free_bytes is None else free_bytes
    largest = ", ".join(f"{row.experiment} {row.gb:.1f} GB" for row in need.head(3).itertuples())
    detail = (f"{free / 1e9:.1f} GB free at {probe_at}; the results of the plan's {int(need['trainings'].sum())} "
              f"trainings need about {total:.1f} GB (largest: {largest}; models, test embeddings and "
              f"records; keep.checkpoint and keep.fold_model add more)")
    return Check("disk", f"results/{plan.name}", OK if free >= total * 1e9 else ACTION, detail)


def stale_check(plan) -> Check | None:
    """Half-written outputs of killed steps (a store build killed with -9, say) under the data
    root, down to the store folders: each counts against the free space until removed."""
    from dmlbench.io import stale_temporaries

    root = Path(plan.preset["data"]["root"])
    folders = [root] + [p for depth in ("*", "*/*", "*/*/*") for p in root.glob(depth) if p.is_dir()]
    stale = [t for folder in folders for t in stale_temporaries(folder)]
    if not stale:
        return None
    size = sum(f.stat().st_size for t in stale for f in ([t] if t.is_file() else t.rglob("*")) if f.is_file())
    return Check("disk", "stale temporaries", ACTION,
                 f"{len(stale)} left by killed steps ({size / 2**30:.2f} GiB): "
                 + ", ".join(str(t) for t in stale[:5])
                 + "; the next run of their step removes them, or delete them now")


# --- the whole check ----------------------------------------------------------------------------

def data_root_check(plan) -> Check:
    root = plan.preset["data"]["root"]
    problem = machine.data_root_problem(root)
    return Check("data", "data.root", ACTION if problem else OK, problem or f"{root}: a folder this user can write")


def device_checks(plan) -> list[Check]:
    """The devices the runs name, as a job on this machine without GPU slots sees them."""
    import torch

    named = sorted({plan.resolve(run)["device"] for run in plan.all_runs()} - {"auto", "cpu"})
    wrong = [p for p in (machine.device_problem(d, torch.cuda.device_count()) for d in named) if p]
    return [Check("machine", "device setting", ACTION, "; ".join(wrong))] if wrong else []


def run(plan, slurm: bool = False, timeout: float = 5.0, probe=probe_url,
        free_bytes: int | None = None) -> list[Check]:
    needs_gpu = any(plan.resolve(run)["device"] != "cpu" for run in plan.all_runs())
    root = data_root_check(plan)
    checks = environment(slurm, needs_gpu) + [root] + device_checks(plan)
    if root.status == ACTION:
        return checks  # no dataset, disk or stale-file check can look at such a root
    urls = urls_to_probe(plan)
    with ThreadPoolExecutor(max_workers=16) as pool:
        probes = dict(zip(urls, pool.map(lambda u: probe(u, timeout), urls)))
    if urls and all(p.no_answer for p in probes.values()):
        checks.append(Check("network", "sources", INFO,
                            "no network (no source answered): downloads were not checked; local "
                            "files are reported below"))
    checks += dataset_checks(plan, probes)
    checks += weight_checks(plan, probes)
    checks.append(disk_check(plan, checks, free_bytes))
    checks.append(results_disk_check(plan, free_bytes))
    stale = stale_check(plan)
    if stale is not None:
        checks.append(stale)
    return checks


def table(checks: list[Check]) -> str:
    width = max(len(f"{c.area}: {c.item}") for c in checks)
    lines = [f"{'check':<{width}}  {'status':<13}  detail", "-" * (width + 40)]
    lines += [f"{c.area + ': ' + c.item:<{width}}  {c.status:<13}  {c.detail}" for c in checks]
    blocking = sum(c.status == ACTION for c in checks)
    lines.append(f"\n{blocking} item(s) need action" if blocking else "\nEverything the plan needs is here.")
    return "\n".join(lines)
