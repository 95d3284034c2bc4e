# dmlbench workflow: datasets → training → evaluation → tables, figures and the HTML report.
# Wiring only; every step is `python -m dmlbench <step>` (see dmlbench/cli.py).
#   snakemake --cores all --resources gpu=8             # full preset (papers' settings)
#   snakemake --cores 2 --config preset=demo            # fixtures + digits on CPU
import sys
from pathlib import Path

from dmlbench.config import csv_datasets, jobs, preset_owner, trunk_digests
from dmlbench.config.plan import Plan
from dmlbench.core.errors import DmlbenchError
from dmlbench.orchestration import lost_files, warm_start
from dmlbench.core.machine import check_devices, check_folders, check_paths

CONFIG_DIR = Path(workflow.basedir) / "workflow" / "config"
try:  # a wrong setting, file or folder: its message, without Snakemake's trace of the Snakefile
    check_paths(checkout=workflow.basedir, working_folder=Path.cwd(), interpreter=sys.executable)
    PLAN = Plan.load(CONFIG_DIR, config)
    check_folders(PLAN)
    trunk_digests.check_planned(PLAN)  # a pretrained timm trunk whose weights' sha256 nobody recorded: refused
    preset_owner.check(PLAN)  # another preset file of this name has results here: refused
    if workflow.is_main_process:  # what was made from a lost file is made again (not in a job's own process)
        lost_files.reconcile(PLAN, dry_run=lost_files.dry_run_asked(sys.argv))
        csv_datasets.relink(PLAN, dry_run=lost_files.dry_run_asked(sys.argv))  # a CSV moved, its content equal
except DmlbenchError as error:
    sys.exit(f"dmlbench: error: {error}")
PRESET = PLAN.name
JOBS = jobs.of(PLAN)  # what the rules ask of the plan: each step's inputs, spec and trigger (config/jobs.py)
for experiment, reason in PLAN.skipped.items():
    print(f"dmlbench: skipping {experiment}: {reason}", file=sys.stderr)

include: "workflow/rules/common.smk"

include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/reference.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/fair.smk"
include: "workflow/rules/knobs.smk"


onstart:  # jobs about to run: the preset file whose results these are noted; on this machine, the devices the runs name must exist
    preset_owner.record(PLAN)
    if workflow.local_exec:
        try:
            check_devices(PLAN, gpu_count(workflow.global_resources))
        except DmlbenchError as error:
            sys.exit(f"dmlbench: error: {error}")
        warm_start.start_for(PLAN)  # CPU presets: training steps forked from one warm process


onsuccess:
    warm_start.stop_started()


onerror:
    warm_start.stop_started()


# cheap steps stay on the submitting machine under a cluster executor
localrules: all, train_alias, aggregate, analyse, certificate, report, results_table, fair_splits, fair_best, fair_aggregate, knob_aggregate


rule all:
    input:
        f"reports/{PRESET}/index.html",
