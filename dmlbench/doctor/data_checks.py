"""Per dataset of the plan: prepared and valid, files present, a source that answers, or what to do by hand."""

from __future__ import annotations

from pathlib import Path

from dmlbench.data import acquire, datasets, manifest
from dmlbench.doctor.checks import ACTION, OK, Check, Probe
from dmlbench.doctor.weights import weights_needed
from dmlbench.core.errors import DmlbenchError


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
        return Check(
            "dataset", name, ACTION, f"{key} is a file; point it at a folder holding {wanted}, or the extracted dataset"
        )
    layout = acquire.complete_layout(spec, given)
    if layout is not None:
        wrong = [
            f"{f.filename} ({(given / f.filename).stat().st_size:,} bytes, published {f.size:,})"
            for f in layout.files
            if f.size is not None and (given / f.filename).stat().st_size != f.size
        ]
        if wrong:
            return Check(
                "dataset",
                name,
                ACTION,
                f"{key}: {', '.join(wrong)}: not the published file; replace it with an intact copy",
            )
        return Check(
            "dataset",
            name,
            OK,
            f"data.paths.{name}: the {layout.name} files in {given}; "
            f"prepare checks their checksums" + _pinning(layout, given),
        )
    try:
        table = spec.parse(given)
        manifest.check(table, spec.expected, spec.title)
    except DmlbenchError as error:
        return Check(
            "dataset",
            name,
            ACTION,
            f"{key} holds neither the files of a layout ({wanted}) nor the extracted dataset ({error})",
        )
    except OSError as error:
        return Check("dataset", name, ACTION, f"{key} cannot be read ({error})")
    return Check(
        "dataset", name, OK, f"data.paths.{name}: the extracted dataset in {given} ({len(table):,} images listed)"
    )


def _local(plan, name: str) -> Check | None:
    spec = datasets.get(name)
    user = plan.preset["data"]["paths"].get(name)
    if user:
        return _user_folder(spec, Path(user).expanduser())
    folder = Path(plan.preset["data"]["root"]) / "downloads" / name
    layout = acquire.complete_layout(spec, folder)
    if layout is None:
        return None
    wrong = [f.filename for f in layout.files if f.size is not None and (folder / f.filename).stat().st_size != f.size]
    if wrong:
        return Check(
            "dataset", name, ACTION, f"{', '.join(wrong)} in {folder} do not have the published size: replace them"
        )
    return Check(
        "dataset",
        name,
        OK,
        f"the {layout.name} files are in {folder}; prepare extracts them" + _pinning(layout, folder),
    )


def _pinning(layout, folder: Path) -> str:
    """What checks the files that have no published sha256: the digest of their first copy."""
    unpublished = [f.filename for f in layout.files if not f.sha256]
    if not unpublished:
        return ""
    pinned = [n for n in unpublished if acquire.pin_path(folder / n).exists()]
    waiting = [n for n in unpublished if n not in pinned]
    return (
        "; no published sha256 for "
        + ", ".join(unpublished)
        + ": "
        + (f"checked against the digest recorded at first use ({', '.join(pinned)})" if pinned else "")
        + ("; " if pinned and waiting else "")
        + (f"recorded at first use ({', '.join(waiting)})" if waiting else "")
    )


def _sources(spec, probes: dict[str, Probe], folder: Path) -> Check:
    """The first layout whose every file has a source that answers, or what was tried."""
    manual = (
        spec.manual.format(folder=folder)
        if spec.manual
        else "Download "
        + " and ".join(f"{f.filename} ({f.urls[0]})" for f in spec.files)
        + f" elsewhere and put it in {folder}."
    )
    urls = [url for layout in spec.layouts for f in layout.files for url in f.urls]
    if urls and all(probes[url].no_answer for url in urls):
        return Check("dataset", spec.name, ACTION, f"sources not checked (no network). {manual}")
    for layout in spec.layouts:
        live = [next((u for u in f.urls if probes[u].ok), None) for f in layout.files]
        if layout.files and all(live):
            return Check("dataset", spec.name, OK, f"downloadable ({layout.name}, e.g. {live[0]})")
    tried = "; ".join(f"{url}: {probes[url].detail}" for url in urls)
    return Check("dataset", spec.name, ACTION, (f"no source answers ({tried}). " if tried else "") + manual)


def dataset_checks(plan, probes: dict[str, Probe]) -> list[Check]:
    checks = []
    for name in plan.datasets:
        spec = datasets.get(name)
        if spec.csv:  # the plan read and checked the file and its images
            checks.append(
                Check("dataset", name, OK, f"your CSV {spec.csv}: {sum(spec.expected.images.values()):,} images")
            )
            continue
        if spec.write_shipped or plan.preset["data"]["source"] == "fixture":
            checks.append(Check("dataset", name, OK, "made on the machine (fixture or shipped)"))
            continue
        found = _prepared(plan, name) or _local(plan, name)
        if found is not None:
            checks.append(found)
        elif not plan.preset["data"]["download"]:
            checks.append(
                Check(
                    "dataset",
                    name,
                    ACTION,
                    "missing and data.download is false: put its files in data/downloads/" + name,
                )
            )
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
    urls += [url for _, url, path in weights_needed(plan) if not path.exists()]
    return list(dict.fromkeys(urls))
