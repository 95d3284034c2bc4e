"""Which preset file a preset's results belong to. A preset given by `preset_file=PATH` takes the
file's name, which names its `results/<name>/` and `reports/<name>/`: two files of one name run in
one working folder would share them, each moving the other's finished runs aside and training
them again. The workflow records the file it runs (`results/<name>/preset_file`, when jobs start);
another file of that name is refused, with both paths, while those results hold a finished run."""

from __future__ import annotations

from pathlib import Path

from dmlbench.core.errors import ConfigError
from dmlbench.core.io import atomic_path

RECORD = "preset_file"  # in results/<preset>/: the path of the preset file whose runs these are


def _record(plan, working_folder: Path) -> Path:
    return Path(working_folder) / "results" / plan.name / RECORD


def check(plan, working_folder: Path = Path(".")) -> None:
    """Refuse a preset file whose name another preset file's finished results hold here."""
    record = _record(plan, working_folder)
    if plan.preset_file is None or not record.is_file():
        return
    owner = record.read_text().strip()
    if owner == str(plan.preset_file) or next(record.parent.rglob("metrics.json"), None) is None:
        return
    raise ConfigError(
        f"preset_file={plan.preset_file}: {record.parent} holds the finished runs of another preset file "
        f"of the name {plan.name!r}, {owner}; rename this file (the preset takes the file's name) or run "
        f"in another working folder (snakemake -d); if that file was moved here, delete {record}"
    )


def record(plan, working_folder: Path = Path(".")) -> None:
    """Note the preset file whose jobs are about to run (none for a built-in preset)."""
    if plan.preset_file is None:
        return
    path = _record(plan, working_folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_text(f"{plan.preset_file}\n")
