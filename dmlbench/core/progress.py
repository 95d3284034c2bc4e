"""Progress bars with the time left (tqdm) on a terminal, and nothing on a file or pipe: CI and
SLURM logs keep the steps' own lines. `DMLBENCH_PROGRESS=off` turns the bars off everywhere."""

from __future__ import annotations

import os
import shutil
import sys


def wanted(stream=None) -> bool:
    stream = stream or sys.stderr
    return os.environ.get("DMLBENCH_PROGRESS", "on") != "off" and stream.isatty()


class Bar:
    """`update(n)` after each piece of `total` units; a no-op off a terminal or below `at_least`."""

    def __init__(self, total: int, what: str, unit: str = "images", at_least: int = 0):
        self._bar = None
        if total >= at_least and wanted():
            from tqdm import tqdm

            columns = shutil.get_terminal_size((100, 24)).columns  # a terminal of unknown width: 100
            self._bar = tqdm(
                total=total, desc=what, unit=f" {unit}", file=sys.stderr, leave=False, ncols=columns, smoothing=0.1
            )

    def update(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
