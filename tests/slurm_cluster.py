"""A real one-node SLURM cluster on this machine, for the workflow's SLURM profile.

As root on a Debian machine without systemd: installs munge, slurmctld, slurmd and slurm-client
from the distribution (with `accounting`, also slurmdbd and MariaDB), writes a one-node
configuration into a private folder (one fake GPU as gres, `SlurmdParameters=config_overrides` so
that a 2-core machine can advertise the CPUs and memory the profile asks for), starts the daemons
itself and stops them by PID, also when the run fails or is sent SIGTERM or SIGHUP (what make and
a CI time-out send). Each daemon is recorded in `REGISTRY` as it starts, so a run that was killed
outright (SIGKILL) leaves a list the next run reads to stop those daemons first. Used by
`tests/test_slurm.py` (a small chain in `make test`) and by `make test-slurm` (the whole smoke
preset, with and without accounting):

    python tests/slurm_cluster.py [--accounting] [--config preset=smoke ...]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ["munge", "slurmctld", "slurmd", "slurm-client"]
ACCOUNTING_PACKAGES = ["slurmdbd", "mariadb-server"]
NODE_CPUS, NODE_MEMORY_MB = 16, 64000
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")
REGISTRY = Path("/run/dmlbench-slurm-test/daemons")  # "name pid" per daemon this test started
LOCK = REGISTRY.parent / "lock"  # held by the one cluster this machine runs at a time


class Unavailable(Exception):
    """This machine cannot run the cluster (not root, no apt-get, packages not installable)."""


def install(accounting: bool) -> None:
    if os.geteuid() != 0:
        raise Unavailable("a SLURM cluster needs root (apt-get, daemons)")
    wanted = PACKAGES + (ACCOUNTING_PACKAGES if accounting else [])
    binaries = ["munged", "slurmctld", "slurmd", "sbatch"] + (["slurmdbd", "mariadbd"] if accounting else [])
    if all(shutil.which(b) or Path(f"/usr/sbin/{b}").exists() for b in binaries):
        return
    if shutil.which("apt-get") is None:
        raise Unavailable("no apt-get: install " + " ".join(wanted) + " by hand")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *wanted],
    ):
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
        if result.returncode:
            raise Unavailable(f"{' '.join(command[:3])} failed: {result.stderr.strip()[-500:]}")


def _wait(what: str, check, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up within {seconds:g} s")
        time.sleep(0.5)


def _pid_written(pid_file: Path) -> bool:
    """A daemon creates its pid file before it writes the number in it: wait for the number."""
    return pid_file.exists() and bool(pid_file.read_text().split())


class Cluster:
    """The daemons of a one-node cluster, their configuration and PIDs under `folder`."""

    def __init__(self, folder: Path, accounting: bool):
        self.folder, self.accounting = folder, accounting
        self.host = socket.gethostname().split(".")[0]
        self.conf = folder / "slurm.conf"
        self.pids: dict[str, Path] = {}
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))

    # --- configuration ---
    def write_config(self) -> None:
        f = self.folder
        for sub in ("ctld", "d", "log"):
            (f / sub).mkdir(parents=True, exist_ok=True)
        storage = (
            "AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=localhost\n"
            if self.accounting
            else "AccountingStorageType=accounting_storage/none\n"
        )
        self.conf.write_text(
            f"ClusterName=dmlbench\nSlurmctldHost={self.host}\nAuthType=auth/munge\n"
            f"SlurmUser=root\nSlurmdUser=root\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
            f"SchedulerType=sched/backfill\nSelectType=select/cons_tres\n"
            f"SelectTypeParameters=CR_Core_Memory\nGresTypes=gpu\nSlurmdParameters=config_overrides\n"
            f"SlurmctldDebug=debug\nSlurmdDebug=debug\n"  # a failure message quotes the logs' last lines
            f"{_own_ids_ports_and_patience()}"
            f"ReturnToService=2\nMinJobAge=600\nMpiDefault=none\nJobAcctGatherType=jobacct_gather/none\n"
            f"{storage}StateSaveLocation={f / 'ctld'}\nSlurmdSpoolDir={f / 'd'}\n"
            f"SlurmctldPidFile={f / 'slurmctld.pid'}\nSlurmdPidFile={f / 'slurmd.pid'}\n"
            f"SlurmctldLogFile={f / 'log' / 'slurmctld.log'}\nSlurmdLogFile={f / 'log' / 'slurmd.log'}\n"
            f"NodeName={self.host} CPUs={NODE_CPUS} RealMemory={NODE_MEMORY_MB} Gres=gpu:1 State=UNKNOWN\n"
            f"PartitionName=gpu Nodes={self.host} Default=YES MaxTime=INFINITE State=UP\n"
            f"PartitionName=cpu Nodes={self.host} MaxTime=INFINITE State=UP\n"
        )
        (f / "gres.conf").write_text(f"NodeName={self.host} Name=gpu File=/dev/null\n")
        # srun inside a job finds the configuration only at the default path (not SLURM_CONF)
        if SYSTEM_CONF.is_symlink() and not SYSTEM_CONF.exists():
            SYSTEM_CONF.unlink()  # left by an earlier run that was killed
        if SYSTEM_CONF.exists() or SYSTEM_CONF.is_symlink():
            raise Unavailable(
                f"{SYSTEM_CONF} exists: this machine has a SLURM configuration that the test would replace"
            )
        SYSTEM_CONF.parent.mkdir(parents=True, exist_ok=True)
        SYSTEM_CONF.symlink_to(self.conf)

    # --- daemons ---
    def _daemon(self, name: str, command: list[str], pid_file: Path) -> None:
        result = subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=60)
        if result.returncode:
            raise RuntimeError(f"{name} did not start: {result.stderr.strip()[-800:]}")
        _wait(f"{name}'s pid file", lambda: _pid_written(pid_file))
        self._record(name, pid_file)

    def _record(self, name: str, pid_file: Path) -> None:
        self.pids[name] = pid_file
        REGISTRY.parent.mkdir(parents=True, exist_ok=True)
        with open(REGISTRY, "a") as registry:
            registry.write(f"{name} {pid_file.read_text().split()[0]}\n")

    def start_munge(self) -> None:
        key = Path("/etc/munge/munge.key")
        if not key.exists():
            subprocess.run(["mungekey", "--create"], check=True, capture_output=True, timeout=60)
            shutil.chown(key, "munge", "munge")
        for folder in (Path("/run/munge"), Path("/var/log/munge"), Path("/var/lib/munge")):
            folder.mkdir(parents=True, exist_ok=True)
            shutil.chown(folder, "munge", "munge")
        pid = Path("/run/munge/munged.pid")
        if pid.exists() and _alive(int(pid.read_text().split()[0])):
            return  # a munged this run did not start: used, and left running
        self._daemon("munged", ["runuser", "-u", "munge", "--", "munged"], pid)

    def start_accounting(self) -> None:
        data = self.folder / "mysql"
        subprocess.run(
            ["mariadb-install-db", "--user=root", f"--datadir={data}"], check=True, capture_output=True, timeout=120
        )
        socket_path = self.folder / "mysql.sock"
        pid = self.folder / "mysql.pid"
        log = open(self.folder / "log" / "mariadb.log", "w")
        subprocess.Popen(
            [
                "mariadbd",
                "--user=root",
                f"--datadir={data}",
                f"--socket={socket_path}",
                f"--pid-file={pid}",
                "--port=3306",
                "--bind-address=127.0.0.1",
            ],
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        _wait("mariadb", lambda: socket_path.exists() and _pid_written(pid))
        self._record("mariadbd", pid)
        sql = (
            "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';"
            "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
        )
        subprocess.run(["mariadb", f"--socket={socket_path}", "-e", sql], check=True, capture_output=True, timeout=60)
        dbd = self.folder / "slurmdbd.conf"
        dbd.write_text(
            f"AuthType=auth/munge\nDbdHost=localhost\nSlurmUser=root\nStorageType="
            f"accounting_storage/mysql\nStorageHost=127.0.0.1\nStorageLoc=slurm_acct_db\n"
            f"StorageUser=slurm\nStoragePass=slurm\nStoragePort=3306\n"
            f"PidFile={self.folder / 'slurmdbd.pid'}\nLogFile={self.folder / 'log' / 'slurmdbd.log'}\n"
        )
        dbd.chmod(0o600)
        # slurmdbd reads slurmdbd.conf beside the slurm.conf named by SLURM_CONF
        result = subprocess.run(["slurmdbd"], capture_output=True, text=True, env=self.env, timeout=60)
        if result.returncode:
            raise RuntimeError(f"slurmdbd did not start: {result.stderr[-800:]}")
        _wait("slurmdbd", lambda: _pid_written(self.folder / "slurmdbd.pid"))
        self._record("slurmdbd", self.folder / "slurmdbd.pid")
        _wait("slurmdbd's port 6819", lambda: _listening(6819), 90)
        subprocess.run(["sacctmgr", "-i", "add", "cluster", "dmlbench"], capture_output=True, env=self.env, timeout=60)

    def start(self) -> None:
        self.write_config()
        self.start_munge()
        if self.accounting:
            self.start_accounting()
        self._daemon("slurmctld", ["slurmctld", "-f", str(self.conf)], self.folder / "slurmctld.pid")
        self._daemon("slurmd", ["slurmd", "-f", str(self.conf)], self.folder / "slurmd.pid")
        _wait("the node", self.node_idle, 90)

    def node_idle(self) -> bool:
        result = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=self.env, timeout=60)
        return result.returncode == 0 and "idle" in result.stdout

    def stop(self) -> None:
        for name in ("slurmd", "slurmctld", "slurmdbd", "mariadbd", "munged"):
            pid_file = self.pids.get(name)
            if pid_file is not None and pid_file.exists():
                _terminate(int(pid_file.read_text().split()[0]), name)
        stop_job_steps()
        REGISTRY.unlink(missing_ok=True)
        if SYSTEM_CONF.is_symlink() and Path(os.readlink(SYSTEM_CONF)) == self.conf:
            SYSTEM_CONF.unlink()

    def diagnostics(self, lines: int = 40) -> str:
        """For a failure message: the SLURM processes on this machine and the daemons' last log lines."""
        processes = subprocess.run(
            ["ps", "-eo", "pid,ppid,etime,args"], capture_output=True, text=True, timeout=60
        ).stdout.splitlines()
        parts = ["SLURM processes:", *(p for p in processes if "slurm" in p or "munged" in p)]
        for command in (["squeue", "-a", "-o", "%i %j %T %r %M"], ["scontrol", "show", "step"]):
            answer = subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=60)
            parts += [f"--- {' '.join(command)}", answer.stdout.strip(), answer.stderr.strip()]
        for log in sorted((self.folder / "log").glob("*.log")):
            parts += [f"--- {log.name} (last {lines} lines)", *log.read_text(errors="replace").splitlines()[-lines:]]
        return "\n".join(parts)

    def jobs(self) -> dict[str, dict[str, str]]:
        """ "<job id> <comment>" (the SLURM plugin's comment names the rule: rule_<name>_…, a group's
        rule_<group id>_<rules>) → the job's fields as the controller recorded them (scontrol's
        recent records: TimeLimit, TRES, SubmitTime, …)."""
        out = subprocess.run(
            ["scontrol", "show", "job", "-o"], capture_output=True, text=True, env=self.env, timeout=60
        ).stdout
        found = {}
        for line in out.splitlines():
            fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
            found[f"{fields.get('JobId', '?')} {fields.get('Comment', '?')}"] = fields
        return found

    def time_limits(self) -> dict[str, str]:
        """ "<job id> <comment>" → the time limit the job asked for (SLURM's own text, e.g. 1-00:00:00)."""
        return {name: fields.get("TimeLimit", "?") for name, fields in self.jobs().items()}

    def completed_jobs(self) -> dict[str, str]:
        """State of every job SLURM ran (sacct with accounting, else scontrol's recent records)."""
        if self.accounting:
            out = subprocess.run(
                ["sacct", "-n", "-X", "-P", "-o", "JobID,JobName,State"],
                capture_output=True,
                text=True,
                env=self.env,
                timeout=60,
            ).stdout
            return {line.split("|")[0]: line.split("|")[2] for line in out.splitlines() if line}
        out = subprocess.run(
            ["scontrol", "show", "job", "-o"], capture_output=True, text=True, env=self.env, timeout=60
        ).stdout
        states = {}
        for line in out.splitlines():
            fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
            states[fields.get("JobId", "?")] = fields.get("JobState", "?")
        return states


def _own_ids_ports_and_patience() -> str:
    """Settings that keep this cluster apart from any other on the machine, and patient on a busy one.

    Job ids start at a random number and the daemons listen on free ports of their own, so that a
    process an earlier cluster left (a slurmstepd outlives its slurmd) can neither reach these
    daemons nor be taken for one of their jobs. The time-outs are SLURM's defaults times six to
    fifteen: a test run keeps both cores busy, and a batch job that takes more than BatchStartTimeout's
    default 10 s to start is counted as lost."""
    ports = []
    for _ in range(2):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])
    return (
        f"FirstJobId={random.randrange(10**5, 6 * 10**7)}\nSlurmctldPort={ports[0]}\nSlurmdPort={ports[1]}\n"
        f"MessageTimeout=60\nBatchStartTimeout=120\nTCPTimeout=30\n"
    )


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _terminate(pid: int, name: str) -> None:
    """SIGTERM, then SIGKILL after 20 s, to `pid` if it is still the daemon `name`."""
    try:
        command = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return
    if not name.startswith(command[:15]) and not command.startswith(name[:15]):
        return  # the pid now belongs to another program
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 20
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)


def stop_job_steps() -> list[int]:
    """Kill every slurmstepd on this machine and the process groups of its tasks (a job's shell
    and what it started): job steps outlive the slurmd that started them. Only test clusters run
    here: `write_config` refuses a machine with a SLURM configuration of its own. The pids killed."""
    steps = [pid for pid, command in _processes() if command == "slurmstepd"]
    groups = set()
    for pid, _ in _processes():
        if _parent(pid) in steps:
            with contextlib.suppress(ProcessLookupError):
                groups.add(os.getpgid(pid))
    for pid in steps:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for group in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
    return steps


def _processes() -> list[tuple[int, str]]:
    """(pid, command name) of every process on this machine."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                found.append((int(entry.name), (entry / "comm").read_text().strip()))
    return found


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def stop_leftovers() -> list[str]:
    """Stop the daemons an earlier run recorded and did not stop (it was killed outright)."""
    if not REGISTRY.exists():
        return []
    stopped = []
    for line in REGISTRY.read_text().splitlines():
        name, pid = line.split()
        if _alive(int(pid)):
            _terminate(int(pid), name)
            stopped.append(f"{name} ({pid})")
    stopped += [f"slurmstepd ({pid})" for pid in stop_job_steps()]
    REGISTRY.unlink()
    if SYSTEM_CONF.is_symlink() and Path(os.readlink(SYSTEM_CONF)).parent.name.startswith("dmlbench-slurm-"):
        shutil.rmtree(Path(os.readlink(SYSTEM_CONF)).parent, ignore_errors=True)  # the killed run's folder
        SYSTEM_CONF.unlink()  # and its configuration
    return stopped


class RunFailed(Exception):
    """The workflow failed on the cluster: its folder (configuration, logs, the run) is kept."""


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: unwind as Ctrl-C does, so the cluster is stopped (under pytest:
    the test run ends, as on Ctrl-C, rather than going on to the next test)."""


@contextmanager
def _signals_unwind():
    def stop(signum, _frame):
        raise Stopped(f"signal {signal.Signals(signum).name}")

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


_holding: list[bool] = []  # whether this process holds the lock


def _lock_file():
    """The lock file, opened; a link in its place is removed, never followed (a plain file of its own)."""
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    if LOCK.is_symlink():
        LOCK.unlink()
    return os.fdopen(os.open(LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644), "r+")


@contextmanager
def one_cluster_at_a_time():
    """Hold this machine's test cluster: /etc/slurm/slurm.conf, munged and the daemon registry are
    the machine's, so a second cluster (another test worker, another test run, `make test-slurm`)
    waits, saying so, until the first has stopped. The kernel lets go when the holder dies."""
    if _holding:
        raise RuntimeError("this process holds the SLURM test cluster already: waiting for it would never end")
    with _lock_file() as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for the SLURM test cluster another run holds ({LOCK})", flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        _holding.append(True)
        try:
            yield
        finally:
            _holding.pop()


@contextmanager
def cluster(accounting: bool = False):
    """Install (if needed), start, yield the cluster, and stop it whatever happens."""
    install(accounting)
    with one_cluster_at_a_time():
        left = stop_leftovers()
        if left:
            print(f"stopped daemons an earlier, killed run left: {', '.join(left)}", flush=True)
        folder = Path(tempfile.mkdtemp(prefix="dmlbench-slurm-"))
        running = Cluster(folder, accounting)
        keep = True  # the folder, with the daemons' logs, when something failed
        with _signals_unwind():
            try:
                running.start()
                yield running
                keep = False
            except Stopped:  # a stop asked for, not a failure: nothing to keep
                keep = False
                raise
            finally:
                running.stop()
                if not keep:
                    shutil.rmtree(folder, ignore_errors=True)


def workflow_command(
    running: Cluster, workdir: Path, config: list[str], targets: tuple[str, ...] = ()
) -> tuple[list[str], dict]:
    """The command line and environment of the workflow through the project's SLURM profile on
    `running` (`targets`: what to make, else the whole workflow)."""
    env = dict(
        running.env,
        PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"],
        PYTHONPATH=str(REPO),
        DMLBENCH_SLURM_CPU_PARTITION="cpu",
    )
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(REPO / "Snakefile"),
        "-d",
        str(workdir),
        "--workflow-profile",
        str(REPO / "workflow" / "profiles" / "slurm"),
        "--jobs",
        "4",
        "--scheduler",
        "greedy",
        # a test waits less between status checks than the plugin's 40 s default
        "--slurm-init-seconds-before-status-checks",
        "5",
        "--config",
        *config,
        "--",
        *targets,
    ]
    return command, env


def run_workflow(running: Cluster, workdir: Path, config: list[str], timeout: float = 3600):
    """The workflow through the project's SLURM profile on `running`."""
    command, env = workflow_command(running, workdir, config)
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--accounting", action="store_true", help="also slurmdbd + MariaDB (sacct)")
    parser.add_argument("--config", nargs="*", default=["preset=smoke"], help="the workflow's --config")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        with cluster(args.accounting) as running:
            print(f"cluster up in {time.monotonic() - started:.0f} s ({running.folder})", flush=True)
            workdir = running.folder / "run"  # kept with the daemons' logs when something failed
            result = run_workflow(running, workdir, args.config)
            jobs = running.completed_jobs()
            print(result.stdout[-3000:], result.stderr[-5000:], sep="\n")
            report = next(workdir.glob("reports/*/index.html"), None)
            failed = {j: s for j, s in jobs.items() if s not in ("COMPLETED",)}
            print(
                f"SLURM jobs: {len(jobs)}, not completed: {failed or 'none'}; "
                f"report: {'written' if report else 'missing'}"
            )
            if result.returncode or not jobs or failed or report is None:
                raise RunFailed(running.folder)  # the cluster keeps its folder
    except Unavailable as reason:
        print(f"SLURM test skipped: {reason}")
        return 0
    except Stopped as reason:
        print(f"stopped by {reason}; the cluster's daemons were stopped")
        return 143
    except RunFailed as failed:
        print(
            f"FAILED in {time.monotonic() - started:.0f} s; the configuration, the daemons' logs and the "
            f"run (run/) are kept in {failed}"
        )
        return 1
    print(f"passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
