"""`python -m dmlbench doctor`: what a new machine has and lacks for a plan, in under a minute.

Checks, without training anything: Python, torch, CUDA devices, faiss (GPU build or not),
snakemake (and, with `--slurm`, the SLURM executor plugin, the GPU partition's MaxTime, nodes and
GPUs and the QOS limits, against what the profile's jobs ask); per dataset of the
plan: prepared and valid, files present, a source that answers (one HEAD or one-byte range request
per source, short timeout), or what to do by hand; the ImageNet weights of the backbones the plan
trains with; free disk against what the missing datasets need. Ends with one table, and a
non-zero exit when something blocks the plan.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from dmlbench.doctor.checks import ACTION, INFO, OK, Check, Probe, probe_url
from dmlbench.doctor.data_checks import dataset_checks, urls_to_probe
from dmlbench.doctor.disk import disk_check, results_disk_check, stale_check
from dmlbench.doctor.machine_checks import data_root_check, device_checks, environment
from dmlbench.doctor.weights import timm_weight_checks, weight_checks

__all__ = [
    "ACTION",
    "INFO",
    "OK",
    "Check",
    "Probe",
    "dataset_checks",
    "probe_url",
    "results_disk_check",
    "run",
    "stale_check",
    "table",
    "timm_weight_checks",
]


def run(plan, slurm: bool = False, timeout: float = 5.0, probe=probe_url, free_bytes: int | None = None) -> list[Check]:
    needs_gpu = any(plan.resolve(run)["device"] != "cpu" for run in plan.all_runs())
    root = data_root_check(plan)
    checks = environment(slurm, needs_gpu) + [root] + device_checks(plan)
    if slurm:
        from dmlbench.doctor.slurm_checks import slurm_checks

        checks += slurm_checks()
    if root.status == ACTION:
        return checks  # no dataset, disk or stale-file check can look at such a root
    urls = urls_to_probe(plan)
    with ThreadPoolExecutor(max_workers=16) as pool:
        probes = dict(zip(urls, pool.map(lambda u: probe(u, timeout), urls)))
    if urls and all(p.no_answer for p in probes.values()):
        checks.append(
            Check(
                "network",
                "sources",
                INFO,
                "no network (no source answered): downloads were not checked; local files are reported below",
            )
        )
    checks += dataset_checks(plan, probes)
    checks += weight_checks(plan, probes)
    checks.append(disk_check(plan, checks, free_bytes))
    checks.append(results_disk_check(plan, free_bytes))
    stale = stale_check(plan)
    if stale is not None:
        checks.append(stale)
    from dmlbench.config.verdict_spec import undecidable_line

    few_seeds = undecidable_line(plan)
    if few_seeds:
        checks.append(Check("verdicts", "seeds", INFO, few_seeds))
    return checks


def table(checks: list[Check]) -> str:
    width = max(len(f"{c.area}: {c.item}") for c in checks)
    lines = [f"{'check':<{width}}  {'status':<13}  detail", "-" * (width + 40)]
    lines += [f"{c.area + ': ' + c.item:<{width}}  {c.status:<13}  {c.detail}" for c in checks]
    blocking = sum(c.status == ACTION for c in checks)
    lines.append(f"\n{blocking} item(s) need action" if blocking else "\nEverything the plan needs is here.")
    return "\n".join(lines)
