"""A run folder that is another run's training (`dmlbench.config.run_dedup`): a relative symbolic
link to that run's folder, swapped in atomically, so the experiment's tables, figures and records
read the same files as the run it is. A real run folder in its place (trained before the two were
known to be one training) is kept beside it as `<folder>.superseded`."""

from __future__ import annotations

import os
from pathlib import Path

from dmlbench.core.errors import DmlbenchError


def link(folder: Path, trained: Path) -> None:
    """Make `folder` a link to the finished run folder `trained`."""
    folder, trained = Path(folder), Path(trained)
    if not (trained / "metrics.json").is_file():
        raise DmlbenchError(f"{trained}/metrics.json is missing: {folder} links to that run once it finished")
    relative = os.path.relpath(trained, folder.parent)
    if folder.is_symlink() and os.readlink(folder) == relative:
        return
    if not folder.is_symlink() and folder.is_dir():
        if any(folder.iterdir()):
            aside, n = folder.with_name(f"{folder.name}.superseded"), 1
            while aside.exists() or aside.is_symlink():
                aside, n = folder.with_name(f"{folder.name}.superseded{n}"), n + 1
            folder.rename(aside)
        else:
            folder.rmdir()
    staged = folder.with_name(f".{folder.name}.link-{os.getpid()}")
    staged.unlink(missing_ok=True)
    os.symlink(relative, staged)
    os.replace(staged, folder)
