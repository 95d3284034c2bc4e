"""Errors that stop a step with a message saying what is wrong and what to do."""

import errno


class DmlbenchError(Exception):
    """Base of the suite's own errors; the command line prints the message without a traceback."""


class ConfigError(DmlbenchError):
    """A config key, value, method, dataset or experiment id is wrong."""


class DatasetError(DmlbenchError):
    """A dataset is missing, corrupt or does not have the expected content."""


class ChecksumError(DatasetError):
    """A downloaded or provided file does not have the published checksum."""


_WHAT_TO_DO = {
    errno.EACCES: "make it (or its folder) readable and writable by this user, or choose another folder",
    errno.EPERM: "make it (or its folder) readable and writable by this user, or choose another folder",
    errno.EROFS: "it lies on a read-only file system: run from (or point the setting at) a writable folder",
    errno.ENOSPC: "the disk is full: free space there and rerun",
    errno.EDQUOT: "the disk quota is used up: free space there and rerun",
    errno.ENOTDIR: "a part of the path is a file, not a folder: move the file away or choose another path",
    errno.EISDIR: "a folder stands where a file belongs: remove or rename the folder, then rerun",
    errno.ELOOP: "a symbolic link on the path loops: repair or remove it",
    errno.ENAMETOOLONG: "the path is too long: choose a shorter one",
    errno.EFBIG: "the file has reached the largest size allowed here (the file system's, or `ulimit -f`): "
    "raise the limit or move the folder to a file system that allows it, then rerun",
}


def explain_os_error(error: OSError) -> str | None:
    """The file and what to do for an error of the machine a user can mend (permissions, a
    read-only or full disk, a file where a folder belongs); None for the others."""
    advice = _WHAT_TO_DO.get(error.errno)
    if advice is None:
        return None
    where = " → ".join(str(name) for name in (error.filename, error.filename2) if name is not None)
    return f"{where or 'the output (a file or the standard output)'}: {error.strerror}; {advice}"
