"""A check's record, the statuses, and the one-byte probe of a download source."""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass

OK, ACTION, INFO = "OK", "action needed", "info"
WEIGHTS_GB = 0.3


@dataclass(frozen=True)
class Check:
    area: str
    item: str
    status: str
    detail: str


@dataclass(frozen=True)
class Probe:
    """What one source answered: `ok`, and whether the failure was the network's (no answer)."""

    ok: bool
    detail: str
    no_answer: bool = False


def probe_url(url: str, timeout: float = 5.0) -> Probe:
    """One request that fetches at most one byte: does the source serve a file?"""
    request = urllib.request.Request(url, headers={"Range": "bytes=0-0"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            kind = response.headers.get("Content-Type", "") if response.headers else ""
            if "text/html" in kind:
                return Probe(False, "answers with an HTML page, not the file")
            return Probe(True, "answers")
    except urllib.error.HTTPError as error:
        return Probe(False, f"HTTP {error.code}")
    except (urllib.error.URLError, OSError, TimeoutError) as error:
        return Probe(False, f"no answer ({getattr(error, 'reason', error)})", no_answer=True)
