"""Child processes that cannot outlive the process that started them (Linux): the kernel sends
a child SIGKILL when its parent ends, however the parent ends (SIGTERM, kill -9, a crash), so a
stopped step leaves no decoding worker, probe or job running. Elsewhere this does nothing."""

from __future__ import annotations

import ctypes
import os
import select
import signal
import threading

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None = None, signum: int = signal.SIGKILL) -> None:
    """Called in the child (before exec, or first in a worker): `signum` (SIGKILL unless the child
    handles another to tidy up) when the parent ends. `parent`, the pid of the process that
    started the child: if it has already ended, the signal comes now."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signum)
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), signum)


def end_with(owner: int) -> None:
    """Called in a process that `owner` did not fork itself (a fork server's child, which keeps the
    fork server alive): SIGKILL when `owner` ends, watched on a pidfd (Linux ≥ 5.3)."""
    try:
        handle = os.pidfd_open(owner)
    except ProcessLookupError:  # already ended
        os.kill(os.getpid(), signal.SIGKILL)
    except (AttributeError, OSError):  # no pidfd here
        return

    def watch() -> None:
        select.select([handle], [], [])  # readable once `owner` has ended
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="end-with-owner", daemon=True).start()


def exit_on_signals(signums=(signal.SIGTERM, signal.SIGHUP)) -> None:
    """In a main process: these signals end it as `sys.exit(128 + signum)` would, so that its
    `finally` blocks and exit handlers run (its children stopped, its fork server's temporary
    folder removed) instead of the default immediate end."""

    def leave(signum, _frame):
        raise SystemExit(128 + signum)

    for signum in signums:
        signal.signal(signum, leave)
