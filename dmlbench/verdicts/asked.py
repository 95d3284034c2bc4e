"""The numbers a verdict may judge: the rows of an experiment's runs.csv whose runs the settings
asked plan (`dataset/method/seedN`), each trained with the planned settings (its `fingerprint`,
written by the aggregate step). Rows of runs not asked are left out; a row of other settings is
refused, so that no verdict is stamped with settings its numbers were not made with."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dmlbench.core.errors import DmlbenchError


def rows(runs: pd.DataFrame, planned: dict[str, str | list[str]], path: Path) -> pd.DataFrame:
    """`runs` narrowed to the planned runs; DmlbenchError naming `path` where one was trained
    with other settings (a fingerprint left empty: numbers made by hand, nothing to compare). A
    run may be planned with two fingerprints: its own and the earlier run's it is the same
    training as (its folder a link to that one, or trained in its own under a narrower selection)."""
    keys = runs["dataset"].astype(str) + "/" + runs["method"].astype(str) + "/seed" + runs["seed"].astype(str)
    mine = runs[keys.isin(planned)]
    if mine.empty:
        return mine
    if "fingerprint" not in runs:
        raise DmlbenchError(
            f"{path} records no settings of its runs (aggregated by an older version): rerun the pipeline "
            f"with these settings (it aggregates again, training nothing), then `python -m dmlbench verdict` again"
        )
    other = [
        key
        for key, found in zip(keys[mine.index], mine["fingerprint"])
        if isinstance(found, str) and found and found not in _accepted(planned[key])
    ]
    if other:
        raise DmlbenchError(
            f"{path}: {len(other)} of its runs were trained with other settings than those asked "
            f"({', '.join(other[:3])}{' …' if len(other) > 3 else ''}): run the pipeline with these settings first "
            f"(snakemake --config …), or ask the verdict with the settings the results were made with"
        )
    return mine


def _accepted(planned: str | list[str]) -> list[str]:
    return [planned] if isinstance(planned, str) else list(planned)
