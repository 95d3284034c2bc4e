"""pytorch-metric-learning's losses as methods: `loss: {name: "pml:CircleLoss", m: 0.25, gamma: 256}`.

Any loss class of `pytorch_metric_learning.losses` (PML, an optional dependency: `pip install -e
'.[pml]'`) is a loss of the suite under the name `pml:<Class>`, in a methods file and in
`losses.build`. Its parameters are its constructor's, with `distance` and `reducer` (a PML class
name, or `{name: <Class>, <its parameters>}`); each value is checked against the type of its default,
and the loss is built once when the plan loads, so a value PML itself refuses (Circle loss with
another distance) is named before any job. A suite miner feeds a PML pair loss: the pairs it keeps
(or its triplets) become PML's `indices_tuple`. A PML loss with class weights (ArcFace, CosFace,
SubCenter-ArcFace, Proxy-Anchor, ...) gets `num_classes` and the embedding size from the training, as
the suite's proxy losses do, and takes no miner. The suite's own losses stay the reference: where
both implement one equation, tests compare them (`tests/test_pml_adapter.py`).

Unlike a user's package (read from its source, nothing imported), a `pml:` name imports PML (and
torch) when the plan checks it: PML is a library this suite names, not code of the methods file."""

from __future__ import annotations

import hashlib
import inspect
from pathlib import Path

from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import did_you_mean

PREFIX = "pml:"
# classes that are no loss of their own: they take a loss object, or are a base its subclasses fill in
WRAPPERS = {"CrossBatchMemory", "MultipleLosses", "SelfSupervisedLoss", "BaseLossWrapper", "GenericPairLoss"}
OBJECTS = ("distance", "reducer")  # parameters naming a PML object: its class name, or {name: …, its parameters}
# a parameter's type, read from its default: PML writes float parameters' defaults as whole numbers too
# (ContrastiveLoss(pos_margin=0, neg_margin=1)), so a whole-number default takes any number
TYPES = {bool: "bool", int: "int | float", float: "float", str: "str"}


def is_pml(name) -> bool:
    return isinstance(name, str) and name.startswith(PREFIX)


def library(what: str):
    try:
        import pytorch_metric_learning.distances as distances
        import pytorch_metric_learning.losses as losses
        import pytorch_metric_learning.reducers as reducers
    except ImportError:
        raise ConfigError(
            f"{what}: pytorch-metric-learning is not installed; `pip install -e '.[pml]'` (or pip install "
            f"pytorch-metric-learning) to use its losses"
        ) from None
    return losses, distances, reducers


def classes(module, base) -> dict[str, type]:
    return {
        name: value
        for name, value in vars(module).items()
        if isinstance(value, type) and issubclass(value, base) and value is not base and not name.startswith("Base")
    }


def loss_class(name: str) -> type:
    """PML's loss class of `name` ("pml:CircleLoss"); ConfigError naming the closest where PML has none."""
    losses, _, _ = library(f"loss {name!r}")
    attribute = name[len(PREFIX) :]
    known = {k: v for k, v in classes(losses, losses.BaseMetricLossFunction).items() if k not in WRAPPERS}
    if attribute in WRAPPERS:
        raise ConfigError(
            f"loss {name!r}: {attribute} is no loss of its own (it wraps a loss object, or is a base), "
            f"which a methods file cannot give"
        )
    if attribute not in known:
        raise ConfigError(
            f"loss {name!r}: pytorch-metric-learning has no loss {attribute!r}{did_you_mean(attribute, known)}; "
            f"its losses: {', '.join(sorted(known))}"
        )
    return known[attribute]


def parameters(cls: type) -> dict[str, object]:
    """The constructor's own keyword parameters and their defaults (`inspect.Parameter.empty`:
    none), `embedding_size` named `embedding_dim` as the suite's losses name it, then `distance`
    and `reducer`, which every PML loss passes on to its base."""
    found = {}
    for key, parameter in inspect.signature(cls.__init__).parameters.items():
        if key == "self" or parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            continue
        found["embedding_dim" if key == "embedding_size" else key] = parameter.default
    return found | {key: None for key in OBJECTS if key not in found}


def component(name: str) -> dict:
    """The fields of the `declared.Component` of PML's loss `name`: its parameters and their types (its
    defaults'), `needs` for a loss with class weights, and the sha256 of the file that defines it
    (`method.code`)."""
    cls = loss_class(name)
    params = parameters(cls)
    weighted = "num_classes" in params
    needs = tuple(k for k in ("num_classes", "embedding_dim") if k in params)
    required = tuple(k for k, v in params.items() if v is inspect.Parameter.empty)
    path = Path(inspect.getsourcefile(cls))
    line = inspect.getsourcelines(cls)[1]
    types = tuple(None if k in OBJECTS else TYPES.get(type(v)) for k, v in params.items())
    return dict(
        name=name,
        source=f"pytorch_metric_learning {path.name}:{line}",
        params=tuple(params),
        required=required,
        open=False,
        takes_miner=not weighted,
        needs=needs,
        defaults=tuple(None if v is inspect.Parameter.empty else repr(v) for v in params.values()),
        doc=inspect.getdoc(cls) or f"pytorch-metric-learning's {cls.__name__}",
        types=types,
        code=((cls.__module__, hashlib.sha256(path.read_bytes()).hexdigest()),),
    )
