"""A SLURM site's limits, read rather than assumed: the GPU partition's MaxTime, nodes and GPUs
(`sinfo`), and the QOS limits where accounting answers (`sacctmgr`); `doctor --slurm` sets them
against what the profile will ask (`slurm_profile.job_minutes`)."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Partition:
    name: str
    max_minutes: int | None  # None: no limit (INFINITE)
    nodes: int
    gpus_per_node: int  # from its gres (gpu:8, gpu:a100:4); 0 where none is declared


def minutes(limit: str) -> int | None:
    """SLURM's time text ("1-00:00:00", "2:00:00", "30:00", "45", "UNLIMITED") in minutes; None:
    no limit. ValueError naming the text where it is none of those."""
    text = limit.strip()
    if text.upper() in ("INFINITE", "UNLIMITED"):
        return None
    days, _, clock = text.rpartition("-")
    parts = clock.split(":")
    if not (days == "" or days.isdigit()) or not all(p.isdigit() for p in parts) or not 1 <= len(parts) <= 3:
        raise ValueError(f"{limit!r} is no SLURM time limit (days-hours:minutes:seconds)")
    numbers = [int(p) for p in parts]
    if days == "" and len(parts) == 1:  # minutes
        hours, mins, secs = 0, numbers[0], 0
    elif days == "" and len(parts) == 2:  # minutes:seconds
        hours, mins, secs = 0, numbers[0], numbers[1]
    else:  # hours[:minutes[:seconds]] after a day count, or hours:minutes:seconds
        hours, mins, secs = (numbers + [0, 0])[:3]
    return int(days or 0) * 1440 + hours * 60 + mins + (1 if secs else 0)


def gpus(gres: str) -> int:
    """GPUs per node of a gres text ("gpu:8", "gpu:a100:4(S:0-1)", "(null)")."""
    found = re.findall(r"gpu(?::[A-Za-z0-9_.-]+)?:(\d+)", gres)
    return max((int(n) for n in found), default=0)


def read_partition(name: str, timeout: float = 15.0) -> Partition | None:
    """The partition's limits from `sinfo`; None where sinfo is absent, does not answer or knows
    no such partition."""
    if shutil.which("sinfo") is None:
        return None
    try:
        done = subprocess.run(
            ["sinfo", "--noheader", "--partition", name, "--format", "%l|%D|%G"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    rows = [line.split("|") for line in done.stdout.splitlines() if line.count("|") == 2]
    if done.returncode != 0 or not rows:
        return None
    limits = [minutes(row[0]) for row in rows]
    return Partition(
        name=name,
        max_minutes=None if None in limits else min(limits),
        nodes=sum(int(row[1]) for row in rows if row[1].isdigit()),
        gpus_per_node=max(gpus(row[2]) for row in rows),
    )


def read_qos(timeout: float = 15.0) -> list[str]:
    """The QOS limits that bound a user's jobs (MaxWall, MaxJobsPU, MaxSubmitPU, MaxTRESPU), one
    line per QOS that sets any; [] where accounting does not answer."""
    if shutil.which("sacctmgr") is None:
        return []
    fields = ["Name", "MaxWall", "MaxJobsPU", "MaxSubmitPU", "MaxTRESPU"]
    try:
        done = subprocess.run(
            ["sacctmgr", "--noheader", "--parsable2", "show", "qos", f"format={','.join(fields)}"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    lines = []
    for row in (line.split("|") for line in done.stdout.splitlines() if done.returncode == 0):
        set_ = [f"{field} {value}" for field, value in zip(fields[1:], row[1:]) if value]
        if set_:
            lines.append(f"QOS {row[0]}: {', '.join(set_)}")
    return lines
