"""Atomic writes: a step either leaves its complete output or none at all.

Outputs get the permissions ordinary files get under the user's umask (not the 600 of a
temporary file), and a write that fails for want of disk space says so, naming the folder.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from dmlbench.errors import DmlbenchError

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


@contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary sibling path; move it onto `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        yield tmp
        os.replace(tmp, path)
    except BaseException as error:
        _explain_full_disk(error, path)
        raise
    finally:
        if tmp.exists():
            tmp.unlink()


@contextmanager
def atomic_dir(path: str | os.PathLike):
    """Yield a temporary sibling folder; rename it to `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        os.chmod(tmp, 0o777 & ~_umask())
        yield tmp
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException as error:
        _explain_full_disk(error, path)
        raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def write_json(path, data) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def read_json(path):
    return json.loads(Path(path).read_text())
