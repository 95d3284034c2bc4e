"""The code identity of a method's own components: the sha256 of each user's file its loss, miner
and sampler are made of (`dmlbench.methods.plugin_source.Lineage.code`). The plan puts it in the
run's settings (`method.code`), so it is in the fingerprint and the workflow's rerun trigger: a
changed plugin reruns its runs, and the finished metrics of the old code are refused at
aggregation as any metrics of other settings. The training checks that the files it imports are
still those the plan read."""

from __future__ import annotations

import hashlib
from pathlib import Path

from dmlbench.core import module_files
from dmlbench.core.errors import ConfigError
from dmlbench.methods import declared


def digests(method) -> dict[str, str]:
    """Module → sha256 of the user's files of `method`'s loss, miner and sampler (a mapping or a
    `MethodSpec`); {} for the suite's own components."""
    get = method.get if isinstance(method, dict) else lambda key: getattr(method, key, None)
    found = {}
    for family in ("loss", "miner", "sampler"):
        entry = get(family)
        name = entry.get("name") if isinstance(entry, dict) else entry
        known = declared.components(family)
        if name is not None and name in known:
            found.update(known[name].code)
    return dict(sorted(found.items()))


def check(method, where: str) -> None:
    """ConfigError naming the module whose file is not what the plan read for `method`'s run (each
    file read again now, whatever this process read before)."""
    given = dict((method.get("code") if isinstance(method, dict) else method.code) or {})
    now = {module: _digest(module) for module in given} | {m: d for m, d in digests(method).items() if m not in given}
    for module in sorted(set(given) | set(now)):
        if given.get(module) != now.get(module):
            raise ConfigError(
                f"{where}: the file of {module} is not the one the plan read (sha256 "
                f"{str(given.get(module))[:12]} planned, {str(now.get(module))[:12]} now): it changed since; "
                f"run snakemake again, which reruns this method's runs with the new code"
            )


def _digest(module: str) -> str | None:
    """sha256 of `module`'s source file as it is now (None: no longer found)."""
    try:
        path = module_files.source_file(module)
    except ModuleNotFoundError:
        return None
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else None
