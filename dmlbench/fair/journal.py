"""A search's Optuna journal: opened as a study (TPE with the constant liar), locked as Optuna's
writers lock it, and checked before each opening: a cut last line (a writer stopped mid-line) is
dropped, any other damage is named with what to do (`remedy`)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from dmlbench.core.errors import DmlbenchError


def quiet_optuna():
    import optuna  # imported by the search's steps only

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def open_study(journal: Path, name: str, seed: int = 0):
    optuna = quiet_optuna()
    from optuna.storages.journal import JournalFileBackend

    journal = Path(journal)
    journal.parent.mkdir(parents=True, exist_ok=True)
    repair(journal)
    sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True)
    try:
        storage = optuna.storages.JournalStorage(JournalFileBackend(str(journal)))
        return optuna.create_study(
            study_name=name, storage=storage, direction="maximize", sampler=sampler, load_if_exists=True
        )
    except Exception as error:  # records that parse but do not replay: optuna raises several kinds
        raise DmlbenchError(
            f"{journal} cannot be replayed ({type(error).__name__}: {error}): {remedy(journal)}"
        ) from None


def remedy(journal: Path, first: str = "restore it from a backup, or move it aside,") -> str:
    return (
        f"{first} delete {journal.parent}/round*.json and trial*/params.json and rerun: "
        f"the search is asked again "
        f"from slot 0, and fold trainings of unchanged parameters resume from their checkpoints"
    )


def journal_lock(journal: Path):
    from optuna.storages.journal import JournalFileSymlinkLock

    return JournalFileSymlinkLock(str(journal))  # the lock optuna's writers take


def repair(journal: Path) -> None:
    """Drop a cut last line (the unfinished record of a writer stopped mid-line), so that the next
    record is not glued onto it; name any other damage (a line that is not a JSON record)."""
    if not journal.exists():
        return
    lock = journal_lock(journal)
    lock.acquire()
    try:
        data = journal.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            os.truncate(journal, end)
            print(
                f"{journal}: its last line was cut ({len(data) - end} bytes: a writer stopped mid-line); "
                f"that unfinished record was dropped",
                file=sys.stderr,
            )
        for number, line in enumerate(data[:end].splitlines(), 1):
            try:
                record = json.loads(line)
            except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
                record = error
            if not (isinstance(record, dict) and "op_code" in record):
                why = record if isinstance(record, ValueError) else "not a journal record"
                raise DmlbenchError(f"{journal}, line {number}, is damaged ({why}): {remedy(journal)}")
    finally:
        lock.release()
