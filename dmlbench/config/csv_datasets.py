"""Datasets of the user's, one CSV file each, named in the preset or on the command line:

    data:
      csv: {birds: my-birds/birds.csv}    # a relative file is read from the working folder

`register` reads and checks each file (`dmlbench.data.csv_dataset`) when the plan loads, before the
preset's schema, which takes the registered names; `join` adds each dataset to the suite's own
experiments (suite.baselines, suite.fair, suite.knobs with the CUB recipe, suite.modern) and to
the datasets a preset chooses for them. The steps Snakemake starts find the files by the
environment (`environment`); a CSV's content, not its path, is in its runs' settings."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

from dmlbench.core.errors import ConfigError, DmlbenchError
from dmlbench.data import datasets

JOINS = ("suite.baselines", "suite.fair", "suite.knobs", "suite.modern")  # the experiments of any dataset
STAND_IN = "cub"  # the paper recipe suite.knobs moves for a CSV dataset (no paper trains on it)


def given(preset: dict) -> dict[str, Path]:
    """`data.csv` of a merged preset: name → absolute CSV path (nothing where it is not a
    mapping of names to text: the preset's schema names what is wrong)."""
    data = preset.get("data") if isinstance(preset, dict) else None
    files = data.get("csv") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return {}
    return {name: Path(path).expanduser().absolute() for name, path in files.items() if isinstance(path, str) and path}


def register(preset: dict) -> dict[str, Path]:
    """Register every CSV dataset of `preset` (its file read and checked, images included) and
    forget those of another plan; name → CSV path."""
    files = given(preset)
    paths = ((preset.get("data") or {}).get("paths") or {}) if isinstance(preset.get("data"), dict) else {}
    for name, path in files.items():
        where = f"data.csv.{name}"
        if not isinstance(name, str) or not re.fullmatch(datasets.NAME_PATTERN, name):
            raise ConfigError(
                f"{where}: a dataset's name is lowercase letters, digits and underscores, starting with a "
                f"letter ({datasets.NAME_PATTERN}): it names its folders and the workflow's wildcards"
            )
        if isinstance(paths, dict) and name in paths:
            raise ConfigError(f"{where} and data.paths.{name} both name {name}'s files: a CSV dataset has its CSV only")
        try:
            datasets.add_csv(name, path)
        except DmlbenchError as error:
            raise ConfigError(f"{where}: {error}") from None
    datasets.keep_csv(files)
    return files


def join(plan) -> None:
    """Add the plan's CSV datasets to the suite's own experiments and the presets' choices of
    them (`subset.<experiment>.datasets`); `plan.csv_digests`: name → the CSV's sha256."""
    plan.csv_files = register(plan.preset)
    plan.csv_digests = {name: datasets.get(name).csv_sha256 for name in plan.csv_files}
    for name in plan.csv_files:
        for key in JOINS:
            exp = plan.experiments.get(key)
            if exp is None or name in exp.get("datasets", []):
                continue
            exp["datasets"] = [*exp.get("datasets", []), name]
            if exp.get("kind") == "knobs":
                exp["stand_in"] = {**(exp.get("stand_in") or {}), name: STAND_IN}
            chosen = ((plan.preset.get("subset") or {}).get(key) or {}).get("datasets")
            if chosen is not None and name not in chosen:
                chosen.append(name)


def environment(plan) -> str:
    """The shell text that hands the steps the plan's CSV files (a moved file changes no job's
    command or settings); empty without any."""
    if not plan.csv_files:
        return ""
    files = json.dumps({name: str(path) for name, path in sorted(plan.csv_files.items())})
    return f"export {datasets.CSV_DATASETS}={shlex.quote(files)}; "


def relink(plan, dry_run: bool = False) -> None:
    """After a CSV moved with its content unchanged, point its prepared folder's link at the
    images' new place (said on stderr); nothing else is made again. A dry run changes nothing."""
    if dry_run or not plan.csv_files:
        return
    from dmlbench.data import prepare  # the data step's module: only where there is a link to mend

    for name in plan.csv_files:
        folder = Path(plan.data_dir) / name
        moved = prepare.relink(datasets.get(name), folder)
        if moved:
            print(f"dmlbench: {name}: the CSV moved, its content unchanged: images read from {moved}", file=sys.stderr)
