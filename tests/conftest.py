import functools
import json
import os
import sys
from pathlib import Path

import pytest

import dmlbench  # noqa: F401  (first: sets the OpenMP wait policy before any test module imports torch)

REPO = Path(__file__).resolve().parents[1]
SHARED_DATASETS = REPO.parent / "shared" / "datasets"
CONFIG_DIR = REPO / "workflow" / "config"
pytest_plugins = ["processes"]  # every process a test starts: grouped, time-limited, stopped with the run


# `full` plans its pretrained timm trunks only once their weights' sha256 is recorded (a dry run
# reads no weights: any digest of the right form stands in for the one a user reads on the hub)
FULL_DIGESTS = ("--config", "trunk_sha256={vit_s16_dino: " + "a" * 64 + ", dinov2_s14: " + "b" * 64 + "}")


def snakemake_command(workdir: Path, *args: str, snakefile: Path = REPO / "Snakefile", python: str = sys.executable):
    """The workflow's command line as the tests run it: Snakemake on `snakefile` in `workdir`, greedy scheduler."""
    return [python, "-m", "snakemake", "-s", str(snakefile), "-d", str(workdir), "--scheduler", "greedy", *args]


_warm_server = []  # the shared warm-start server this process started


def pytest_configure(config):
    """One warm-start server for the whole test run, its socket in DMLBENCH_WARM_SERVER: the CPU
    Snakemake runs of every test (pytest-xdist's workers inherit it) use it rather than each start
    its own (about 5 s of imports each). It runs only the jobs of its interpreter, checkout and
    import path (dmlbench/orchestration/warm_identity.py); the others, and `python -m dmlbench
    <step>` that a test runs outside Snakemake, start cold as before."""
    from dmlbench.orchestration import warm_start

    if os.environ.get(warm_start.VARIABLE) == "off" or os.environ.get(warm_start.SHARED):
        return  # warm starts off, or a server of an enclosing test run
    _warm_server.append(warm_start.start())
    os.environ[warm_start.SHARED] = os.environ.pop(warm_start.VARIABLE)


def pytest_unconfigure(config):
    from dmlbench.orchestration import warm_start

    while _warm_server:
        warm_start.stop(_warm_server.pop(), Path(os.environ.pop(warm_start.SHARED)))


def pytest_collection_modifyitems(items):
    """The slow tests first, so that side by side (pytest-xdist) the longest start early and the
    many short ones fill in around them."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@functools.cache
def full_plan():
    """The full preset's plan, loaded once per test process and shared by the tests that read it
    (loading checks its 12,000 runs: seconds each time). To be read, never changed:
    `shared_full_plan_unchanged` fails the test process that changed it."""
    from dmlbench.config.plan import Plan

    plan = Plan.load(CONFIG_DIR, {"preset": "full"})
    plan.__dict__["_as_loaded"] = plan_text(plan)
    return plan


@pytest.fixture(scope="session", autouse=True)
def shared_full_plan_unchanged():
    """At the end of each test process: the shared full plan (if a test loaded it) is as loaded."""
    yield
    if full_plan.cache_info().currsize:
        plan = full_plan()
        assert plan_text(plan) == plan.__dict__["_as_loaded"], "a test changed the shared full_plan(): copy it first"


def plan_text(plan) -> str:
    """What a plan was loaded with, as text (its preset, experiments and methods)."""
    return json.dumps([plan.preset, plan.experiments, plan.methods], sort_keys=True, default=str)


@pytest.fixture
def shared_datasets() -> Path:
    if not SHARED_DATASETS.exists():
        pytest.skip(f"{SHARED_DATASETS} is absent (only the developers' checkout has ../shared)")
    return SHARED_DATASETS


def python_env() -> dict:
    """Environment for subprocesses: this interpreter's scripts first on PATH."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


@pytest.fixture(scope="module")
def running():
    """A one-node SLURM cluster (tests/slurm_cluster.py) for the module's tests, with accounting
    when ACCOUNTING=1; skipped, saying why, where this machine cannot run one."""
    import slurm_cluster

    try:
        with slurm_cluster.cluster(accounting=os.environ.get("ACCOUNTING") == "1") as cluster:
            yield cluster
    except slurm_cluster.Unavailable as reason:
        pytest.skip(f"no SLURM cluster here: {reason}")


@pytest.fixture(scope="session")
def full_dry_run(tmp_path_factory):
    """`snakemake -n --cores all --resources gpu=8` of the full preset (the README's dry run), run
    once per test session for the tests that read its job list (tens of thousands of jobs: about
    a minute and a half here): the first worker to ask runs it in a folder all pytest-xdist workers
    of this session share, under a lock; the others wait and read its saved output."""
    import fcntl
    import json
    import subprocess

    from processes import run

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # this session's own folder
    workdir, saved = shared / "full-dry-run", shared / "full-dry-run.json"
    with open(shared / "full-dry-run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not saved.exists():
            workdir.mkdir(exist_ok=True)
            command = snakemake_command(workdir, "-n", "--cores", "all", "--resources", "gpu=8", *FULL_DIGESTS)
            result = run(command, timeout=1800, capture_output=True, text=True, env=python_env())
            assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
            saved.write_text(json.dumps({"args": command, "stdout": result.stdout, "stderr": result.stderr}))
    output = json.loads(saved.read_text())
    return subprocess.CompletedProcess(output["args"], 0, output["stdout"], output["stderr"]), workdir
