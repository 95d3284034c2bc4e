"""Atomic writes: a step either leaves its complete output or none at all.

Outputs get the permissions ordinary files get under the user's umask (not the 600 of a
temporary file), and a write that fails for want of disk space says so, naming the folder.
A temporary is named `.<name>.<host>.<pid>.<random>` so that a process killed outright (kill -9,
a lost node) leaves a temporary the next write of the same output recognises and removes: its
process, on this host, no longer runs.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from dmlbench.core.errors import DmlbenchError

LOW_SPACE = 16 << 20  # bytes; a write that fails with less free than this is blamed on the disk


class DiskFullError(DmlbenchError):
    """No space left where a step writes."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _out_of_space(error: BaseException, folder: Path) -> bool:
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    if not isinstance(error, (OSError, RuntimeError)):
        return False
    try:
        return shutil.disk_usage(folder).free < LOW_SPACE
    except OSError:
        return False


def _explain_full_disk(error: BaseException, path: Path) -> None:
    if _out_of_space(error, path.parent):
        free = shutil.disk_usage(path.parent).free
        raise DiskFullError(
            f"the disk holding {path.parent} is full ({free >> 20} MiB free) while writing "
            f"{path.name}; free space there and rerun: finished work (the last checkpoint) is kept"
        ) from None


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def _prefix(path: Path) -> str:
    return f".{path.name}.{_host()}.{os.getpid()}."


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def stale_temporaries(folder: Path, name: str | None = None) -> list[Path]:
    """Temporaries in `folder` (of output `name`, or of any) whose writer, on this host, is gone."""
    pattern = re.compile(rf"^\.{re.escape(name) if name else '.+'}\.{re.escape(_host())}\.(\d+)\.")
    found = []
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return []
    for entry in entries:
        match = pattern.match(entry.name)
        if match and not _alive(int(match.group(1))):
            found.append(entry)
    return found


def remove_stale_temporaries(path: Path) -> None:
    """Remove what killed writers of `path` left beside it (their processes are gone)."""
    for stale in stale_temporaries(path.parent, path.name):
        shutil.rmtree(stale, ignore_errors=True) if stale.is_dir() else stale.unlink(missing_ok=True)
        print(f"removed {stale}, left by a writer that was killed", file=sys.stderr)


@contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary sibling path; move it onto `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(prefix=_prefix(path), suffix=".tmp", dir=path.parent)
    os.close(fd)
    with _into_place(Path(tmp), path, 0o666, Path.unlink) as tmp:
        yield tmp


@contextmanager
def atomic_dir(path: str | os.PathLike):
    """Yield a temporary sibling folder; rename it to `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    tmp = Path(tempfile.mkdtemp(prefix=_prefix(path), dir=path.parent))
    with _into_place(tmp, path, 0o777, shutil.rmtree) as tmp:
        yield tmp


@contextmanager
def _into_place(tmp: Path, path: Path, mode: int, remove):
    """Yield `tmp` (given `mode` less the umask); then replace `path` with it (a folder in
    the way is removed first), or, if the block fails, `remove` it and explain a full disk."""
    try:
        os.chmod(tmp, mode & ~_umask())
        yield tmp
        if tmp.is_dir() and path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException as error:
        _explain_full_disk(error, path)
        if isinstance(error, OSError) and error.filename is None:  # a writer that did not say which file
            error.filename = str(path)
        raise
    finally:
        if tmp.exists():
            remove(tmp)


@contextmanager
def removed_if_left_empty(folder: str | os.PathLike):
    """Remove `folder` when the block fails and leaves it empty: made for an output that never came
    (by the step, or by Snakemake before the job)."""
    try:
        yield
    except BaseException:
        try:
            Path(folder).rmdir()  # an empty folder only
        except OSError:
            pass
        raise


def set_aside(path: Path) -> Path:
    """Rename a corrupt file or folder the suite derived to `<name>.corrupt` (replacing an older
    one), so that the step that makes it runs again; return the new path."""
    path = Path(path)
    target = path.with_name(path.name + ".corrupt")
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    os.replace(path, target)
    return target


class LockPathError(DmlbenchError):
    """A lock file's path holds something other than a regular file."""


def _kind(mode: int) -> str:
    return (
        "a symbolic link"
        if stat.S_ISLNK(mode)
        else "a folder"
        if stat.S_ISDIR(mode)
        else "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device file"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "not a regular file"
    )


def open_lock(path: str | os.PathLike):
    """Open (creating it) the lock file `path` for reading and writing, for `fcntl.flock`.

    The holder writes its pid into a lock file, so a link there would have it overwrite the file
    the link points to: the last component is opened without following links (O_NOFOLLOW), and a
    path that is not a regular file (a link, a folder, a FIFO, ...) is refused, named."""
    path = Path(path)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as error:
        if error.errno not in (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.EOPNOTSUPP):
            raise
        mode = os.lstat(path).st_mode
    else:
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode):
            os.set_blocking(fd, True)
            return os.fdopen(fd, "r+")
        os.close(fd)
    raise LockPathError(
        f"{path} is {_kind(mode)}, not a lock file: the suite writes its pid into its lock "
        f"files, so it neither follows a link there nor writes into anything else; move "
        f"{path.name} out of {path.parent} (or remove it) and rerun"
    )


def json_text(data) -> str:
    """`data` as the suite's JSON files hold it."""
    return json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"


def write_json(path, data) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json_text(data))


def read_json(path):
    return json.loads(Path(path).read_text())


def read_record(path, fix: str):
    """A JSON record the suite wrote; one that is missing or damaged is refused naming it, with
    `fix` (what remakes it)."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise DmlbenchError(f"{path} is missing: {fix}") from None
    except (OSError, ValueError) as error:
        raise DmlbenchError(
            f"{path} is damaged ({type(error).__name__}: {' '.join(str(error).split())[:120]}): {fix}"
        ) from None


RUN_RECORD_FIX = "rerun the run's train job (`snakemake --forcerun train --until <its metrics.json>`)"
