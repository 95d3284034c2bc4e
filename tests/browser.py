"""Debian's headless Chromium, to look at the report as a reader's browser draws it.

Installed with apt-get when missing (as root on Debian, as the SLURM tests do); `Unavailable`
elsewhere, and the tests that need it are skipped saying why."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from processes import run

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]

# Run in the page once it has loaded: the facts a reader would notice, as JSON in the DOM.
CHECKS = """
<script>
window.addEventListener('load', () => {
  const images = [...document.images].map(i => ({src: i.getAttribute('src'), w: i.naturalWidth,
                                                  shown: i.getBoundingClientRect().width}));
  const tables = [...document.querySelectorAll('table.paper-table')].map(t => ({
    rows: [...t.querySelectorAll('tbody th')].map(c => c.textContent.replace('(quoted)', '').trim()),
    width: t.getBoundingClientRect().width,
    box: t.parentElement.getBoundingClientRect().width}));
  const out = document.createElement('pre');
  out.id = 'checks';
  out.textContent = JSON.stringify({scrollWidth: document.documentElement.scrollWidth,
                                    viewport: window.innerWidth, images, tables});
  document.body.appendChild(out);
});
</script>
"""


class Unavailable(Exception):
    """No Chromium here, and it cannot be installed."""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise Unavailable("no chromium, and installing it needs root and apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium"],
    ):
        result = run(command, timeout=900, capture_output=True, text=True, env=env)
        if result.returncode:
            raise Unavailable(f"{' '.join(command[:3])} failed: {result.stderr.strip()[-300:]}")
    return shutil.which("chromium")


def _run(page: Path, extra: list[str], width: int, height: int) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return run(
            [
                chromium(),
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "--virtual-time-budget=15000",
                *extra,
                page.resolve().as_uri(),
            ],
            timeout=180,
            capture_output=True,
            text=True,
        )


def inspect(page: Path, width: int = 1400) -> dict:
    """Load `page` at `width` pixels and return what the CHECKS script saw."""
    probe = page.with_name(f".probe-{page.name}")
    probe.write_text(page.read_text().replace("</body>", CHECKS + "</body>"))
    try:
        result = _run(probe, ["--dump-dom"], width, 1000)
    finally:
        probe.unlink()
    start = result.stdout.find('<pre id="checks">')
    if start < 0:
        raise AssertionError(f"the page's checks did not run: {result.stderr[-1500:]}")
    text = result.stdout[start + len('<pre id="checks">') : result.stdout.find("</pre>", start)]
    return json.loads(text.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"'))


def screenshot(page: Path, output: Path, width: int = 1400, height: int = 2000) -> None:
    _run(page, [f"--screenshot={output}"], width, height)
