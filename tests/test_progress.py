"""Progress bars: on a terminal a bar with the time left, off a terminal (CI, SLURM logs) only the
steps' own lines."""

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

from conftest import python_env

SCRIPT = """
from dmlbench.data import parallel
tasks = parallel.blocks(list(range(6000)))
out = parallel.map_blocks(lambda start, items: len(items), tasks, 1, "images stored")
assert sum(out) == 6000
"""


def _stderr(on_terminal: bool, **extra) -> str:
    env = dict(python_env(), **extra)
    if not on_terminal:
        done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stderr
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal's size
    process = subprocess.Popen(
        [sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.DEVNULL, stderr=follower, close_fds=True
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert process.wait(timeout=120) == 0
    return seen.decode(errors="replace")


def test_a_terminal_gets_a_bar_with_the_time_left_and_a_log_only_the_lines():
    shown = _stderr(on_terminal=True)
    assert "/6000 [" in shown and "stored:" in shown and "images/s" in shown  # tqdm: done/total [elapsed<left, rate]
    logged = _stderr(on_terminal=False)
    assert "5120 images stored" in logged and "/6000" not in logged
    assert "/6000" not in _stderr(on_terminal=True, DMLBENCH_PROGRESS="off")
