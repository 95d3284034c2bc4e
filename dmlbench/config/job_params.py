"""What a rule passes its job: the settings that decide the numbers as a rerun trigger, the side
settings (tracking, keep, loader) not. A job whose settings are many (a fair search round: every
fold training of its slots) is triggered by their fingerprint and handed them untracked.

Snakemake reruns a job whose `params` changed, comparing the params of built-in types (strings,
numbers, containers) and ignoring others. `Untracked` is such another type: it formats as its
text in the job's command, and a change of it reruns nothing.
"""

from __future__ import annotations

import json


class Untracked:
    """A rule param that is passed on but is no rerun trigger: its text, or a function that makes
    it when the job's command is first written (not while Snakemake decides what to rerun)."""

    def __init__(self, text):
        self._text = text

    def __str__(self) -> str:
        if callable(self._text):
            self._text = self._text()
        return self._text

    def __repr__(self) -> str:
        return f"Untracked({self._text!r})"


def as_json(value) -> str:
    return json.dumps(value, sort_keys=True)
