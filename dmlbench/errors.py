"""Errors that stop a step with a message saying what is wrong and what to do."""


class DmlbenchError(Exception):
    """Base of the suite's own errors; the command line prints the message without a traceback."""


class ConfigError(DmlbenchError):
    """A config key, value, method, dataset or experiment id is wrong."""


class DatasetError(DmlbenchError):
    """A dataset is missing, corrupt or does not have the expected content."""


class ChecksumError(DatasetError):
    """A downloaded or provided file does not have the published checksum."""
