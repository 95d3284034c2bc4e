"""Every training setting of a run, in one place: its type, range, default and meaning.

Each section of a run's settings is a frozen dataclass; each setting a field made by `setting`,
which carries the range and the text the documentation shows. From these dataclasses come the
defaults every run starts from (`defaults()`), the JSON schema that checks every settings block of
the catalogue and of a preset before any job (`json_schema()`), and the typed view training reads
(`RunConfig.from_dict`: `cfg.optimizer.lr`, not `cfg["optimizer"]["lr"]`). Importing this module
does not import torch. A new setting is one field here; the plan, the schema, the documentation
(`docs/generated/settings.md`) and the code reading it follow.
"""

from dmlbench.run_config.fields import from_mapping, section, setting
from dmlbench.run_config.resolved import MethodSpec, RunConfig
from dmlbench.run_config.schema import defaults, documented, json_schema
from dmlbench.run_config.sections import (
    BACKBONE_NAMES,
    Batch,
    EarlyStopping,
    Eval,
    Input,
    Keep,
    Loader,
    LossParams,
    Model,
    Optimizer,
    Performance,
    Probe,
    Record,
    Schedule,
    Scheme,
    Tracking,
    TrainingSettings,
)

__all__ = [
    "BACKBONE_NAMES",
    "Batch",
    "EarlyStopping",
    "Eval",
    "Input",
    "Keep",
    "Loader",
    "LossParams",
    "MethodSpec",
    "Model",
    "Optimizer",
    "Performance",
    "Probe",
    "Record",
    "RunConfig",
    "Schedule",
    "Scheme",
    "Tracking",
    "TrainingSettings",
    "defaults",
    "documented",
    "from_mapping",
    "json_schema",
    "section",
    "setting",
]
