"""pytorch-metric-learning's losses and miners as the suite's: `loss: {name: "pml:CircleLoss", m: 0.4}`,
`miner: {name: "pml:MultiSimilarityMiner", epsilon: 0.1}`.

Any loss class of `pytorch_metric_learning.losses` and any miner of `pytorch_metric_learning.miners`
(PML, installed with the suite) is a component under the name `pml:<Class>`, in a methods file, in
`losses.build` and in `miners.build`. Its parameters are its constructor's (with those its bases
take where it passes `**kwargs` on), and `distance` and `reducer`: a PML class name, or `{name:
<Class>, <its parameters>}`; `pml:CrossBatchMemory` takes its `loss` (and an optional `miner`) the
same way. Each value is checked against the type of its default and against the ranges of `LIMITS`
(those PML's equations need), and the component is built once when the plan loads, so a value PML
itself refuses (Circle loss with another distance) is named before any job. A suite miner feeds a PML
loss (the pairs or triplets it keeps become PML's `indices_tuple`) and a PML miner feeds the suite's
pair losses (its `indices_tuple` becomes the pair masks or triplets). A PML loss with class weights
(ArcFace, CosFace, SubCenter-ArcFace, Proxy-Anchor, ...) or a memory (CrossBatchMemory) gets
`num_classes` and the embedding size from the training, as the suite's proxy losses do, and takes no
miner of the method. The suite's own losses stay the reference: where both implement one equation,
tests compare them (`tests/test_pml_adapter.py`).

Unlike a user's package (read from its source, nothing imported), a `pml:` name imports PML (and
torch) when the plan checks it: PML is a library this suite names, not code of the methods file."""

from __future__ import annotations

import hashlib
import inspect
from pathlib import Path
from types import SimpleNamespace

from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import did_you_mean

PREFIX = "pml:"
# the family's PML module and the base its classes subclass
FAMILIES = {"loss": ("losses", "BaseMetricLossFunction"), "miner": ("miners", "BaseMiner")}
# classes that are no component of their own: they take several losses, or are a base its subclasses fill in
WRAPPERS = {"MultipleLosses", "SelfSupervisedLoss", "BaseLossWrapper", "GenericPairLoss"}
# parameters naming a PML object: its class name, or {name: …, its parameters}; the PML module it is of
OBJECTS = {"distance": "distances", "reducer": "reducers", "loss": "losses", "miner": "miners"}
SHARED = {"loss": ("distance", "reducer"), "miner": ("distance",)}  # those every class passes on to its base
# a parameter's type, read from its default: PML writes float parameters' defaults as whole numbers too
# (ContrastiveLoss(pos_margin=0, neg_margin=1)), so a whole-number default takes any number
TYPES = {bool: "bool", int: "int | float", float: "float", str: "str"}
# the ranges the equations need, of the classes the catalogue names (PML asserts few of them itself)
LIMITS = {
    "CircleLoss": {"m": "[0, 1]", "gamma": "> 0"},
    "SupConLoss": {"temperature": "> 0"},
    "NTXentLoss": {"temperature": "> 0"},
    "ArcFaceLoss": {"margin": "[0, 90]", "scale": "> 0"},  # margin in degrees
    "SubCenterArcFaceLoss": {"margin": "[0, 90]", "scale": "> 0", "sub_centers": ">= 1"},
    "CosFaceLoss": {"margin": "[0, 1]", "scale": "> 0"},
    "CrossBatchMemory": {"memory_size": ">= 1"},
    "ContrastiveLoss": {"pos_margin": "[-2, 2]", "neg_margin": "[-2, 2]"},
    "MultiSimilarityMiner": {"epsilon": ">= 0"},
    "TripletMarginMiner": {"margin": ">= 0", "type_of_triplets": ("all", "hard", "semihard", "easy")},
}


def is_pml(name) -> bool:
    return isinstance(name, str) and name.startswith(PREFIX)


def library(what: str) -> SimpleNamespace:
    """PML's modules (losses, miners, distances, reducers); ConfigError saying how to install it."""
    try:
        import pytorch_metric_learning.distances as distances
        import pytorch_metric_learning.losses as losses
        import pytorch_metric_learning.miners as miners
        import pytorch_metric_learning.reducers as reducers
    except ImportError:
        raise ConfigError(
            f"{what}: pytorch-metric-learning, a dependency of dmlbench, is not installed; `pip install "
            f"'pytorch-metric-learning>=2.9,<3'` (or reinstall dmlbench) to use its losses and miners"
        ) from None
    return SimpleNamespace(losses=losses, miners=miners, distances=distances, reducers=reducers)


def classes(module, base) -> dict[str, type]:
    return {
        name: value
        for name, value in vars(module).items()
        if isinstance(value, type) and issubclass(value, base) and value is not base and not name.startswith("Base")
    }


def component_class(family: str, name: str) -> type:
    """PML's class of `name` ("pml:CircleLoss") in `family` (loss, miner); ConfigError naming the
    closest where PML has none."""
    module_name, base_name = FAMILIES[family]
    module = getattr(library(f"{family} {name!r}"), module_name)
    attribute = name[len(PREFIX) :]
    known = {k: v for k, v in classes(module, getattr(module, base_name)).items() if k not in WRAPPERS}
    if family == "loss":  # a wrapper of one pair loss, with a memory of past batches (Wang et al. 2020)
        known["CrossBatchMemory"] = module.CrossBatchMemory
    if attribute in WRAPPERS:
        raise ConfigError(
            f"{family} {name!r}: {attribute} is no {family} of its own (it takes several losses, or is a base), "
            f"which a methods file cannot give"
        )
    if attribute not in known:
        raise ConfigError(
            f"{family} {name!r}: pytorch-metric-learning has no {family} {attribute!r}"
            f"{did_you_mean(attribute, known)}; its {module_name}: {', '.join(sorted(known))}"
        )
    return known[attribute]


def loss_class(name: str) -> type:
    return component_class("loss", name)


def parameters(cls: type, family: str = "loss") -> dict[str, object]:
    """The constructor's keyword parameters and their defaults (`inspect.Parameter.empty`: none),
    a base's added where `__init__` passes `*args`/`**kwargs` on (a subclass's default first), up
    to the family's PML base; `embedding_size` named `embedding_dim` as the suite's losses name it;
    then `distance` (and a loss's `reducer`), which every class derived from that base passes on to it."""
    found: dict[str, object] = {}
    base = FAMILIES[family][1]
    for klass in cls.__mro__:
        if klass.__name__ == base or klass.__name__ in WRAPPERS:  # the base's own: `SHARED`, or fixed by the class
            break
        if "__init__" not in vars(klass):
            continue
        passes_on = False
        for key, parameter in inspect.signature(klass.__init__).parameters.items():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                passes_on = True
            elif key != "self":
                found.setdefault("embedding_dim" if key == "embedding_size" else key, parameter.default)
        if not passes_on:
            break
    shared = SHARED[family] if any(k.__name__ == base for k in cls.__mro__) else ()
    return found | {key: None for key in shared if key not in found}


def needs(cls: type, family: str = "loss") -> tuple[str, ...]:
    """What the training fills in: the class count and embedding size, where the class takes them."""
    params = parameters(cls, family)
    return tuple(k for k in ("num_classes", "embedding_dim") if k in params)


def takes_miner(cls: type) -> bool:
    """A loss that compares the batch's embeddings with one another (no class weights, no memory)."""
    return not needs(cls)


def component(name: str, family: str = "loss") -> dict:
    """The fields of the `declared.Component` of PML's `name`: its parameters and their types (its
    defaults'), `needs` for a loss with class weights or a memory, its `LIMITS`, and the sha256 of
    the file that defines it (`method.code`)."""
    cls = component_class(family, name)
    params = parameters(cls, family)
    required = tuple(k for k, v in params.items() if v is inspect.Parameter.empty)
    path = Path(inspect.getsourcefile(cls))
    line = inspect.getsourcelines(cls)[1]
    types = tuple(None if k in OBJECTS else TYPES.get(type(v)) for k, v in params.items())
    limits = LIMITS.get(cls.__name__, {})
    return dict(
        name=name,
        source=f"pytorch_metric_learning {path.name}:{line}",
        params=tuple(params),
        required=required,
        open=False,
        takes_miner=family == "loss" and takes_miner(cls),
        needs=needs(cls, family),
        defaults=tuple(None if v is inspect.Parameter.empty else repr(v) for v in params.values()),
        doc=inspect.cleandoc(vars(cls).get("__doc__") or f"pytorch-metric-learning's {cls.__name__}"),
        types=types,
        limits=tuple((k, v) for k, v in limits.items() if k in params),
        code=((cls.__module__, hashlib.sha256(path.read_bytes()).hexdigest()),),
    )
