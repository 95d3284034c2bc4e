"""The losses, miners and samplers the plan knows without importing them (`dmlbench.methods.declared`):
the same names and parameters as Python's own view of every registered component, and a misspelled
name or parameter in the catalogue refused before any job, by the plan and by `snakemake -n`."""

import ast
import inspect
import re
import shutil
import subprocess
import sys

import pytest

from dmlbench.config.plan import Plan
from dmlbench.core.errors import ConfigError
from dmlbench.methods import declared
from dmlbench.methods.losses import LOSSES
from dmlbench.methods.miners import MINERS
from dmlbench.methods.samplers import SAMPLERS

from conftest import CONFIG_DIR, REPO, full_plan, python_env

REGISTRIES = {"loss": LOSSES, "miner": MINERS, "sampler": SAMPLERS}


def _python_view(implementation) -> tuple[list[str], list[str]]:
    """(keyword parameters, those without a default) as `inspect` sees them; where the constructor
    passes **kwargs on, its first base class's constructor is followed."""
    names, required = [], []
    for cls in implementation.__mro__[:2] if inspect.isclass(implementation) else [implementation]:
        params = inspect.signature(cls).parameters.values()
        for p in params:
            if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or p.name in names:
                continue
            names.append(p.name)
            if p.default is p.empty:
                required.append(p.name)
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return names, required


def _python_defaults(implementation) -> dict:
    """Parameter → default (None where it has none), over the classes `_python_view` follows."""
    found = {}
    for cls in implementation.__mro__[:2] if inspect.isclass(implementation) else [implementation]:
        for p in inspect.signature(cls).parameters.values():
            if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name not in found:
                found[p.name] = None if p.default is p.empty else p.default
    return found


@pytest.mark.parametrize("family", list(REGISTRIES))
def test_the_source_reading_finds_every_registered_component(family):
    registered = {n for n in declared.components(family) if ":" not in n}  # not those named on demand
    assert registered == set(REGISTRIES[family].names())


@pytest.mark.parametrize("family, name", [(f, n) for f, r in REGISTRIES.items() for n in r.names()])
def test_each_components_parameters_are_its_constructors(family, name):
    component = declared.components(family)[name]
    names, required = _python_view(REGISTRIES[family].get(name))
    assert not component.open
    assert list(component.params) == names and list(component.required) == required, component.source
    if family == "loss":
        implementation = REGISTRIES[family].get(name)
        assert component.takes_miner == implementation.takes_miner
        assert component.restricts_pairs == getattr(implementation, "restricts_pairs", False)
        assert component.needs == tuple(getattr(implementation, "needs", ()))
        assert component.class_vectors == hasattr(implementation, "class_vectors")
        assert set(component.needs) <= set(component.params)
    defaults = _python_defaults(REGISTRIES[family].get(name))
    assert [None if d is None else ast.literal_eval(d) for d in component.defaults] == [defaults[p] for p in names]
    assert component.doc == inspect.getdoc(REGISTRIES[family].get(name))
    implementation = REGISTRIES[family].get(name)
    for attribute in ("limits", "about"):  # as Python sees it (a class: its bases' entries under its own)
        seen = {}
        for cls in reversed(getattr(implementation, "__mro__", None) or (implementation,)):
            seen.update(cls.__dict__.get(attribute, {}))
        assert dict(getattr(component, attribute)) == {p: v for p, v in seen.items() if p in names}


@pytest.mark.parametrize("family, name", [(f, n) for f, r in REGISTRIES.items() for n in r.names()])
def test_every_parameter_says_what_it_is_and_where_it_comes_from(family, name):
    """The methods reference shows each parameter's meaning and source (`about`), one place with its
    type (the annotation), range (`limits`) and default (the signature)."""
    component = declared.components(family)[name]
    about = dict(component.about)
    missing = [p for p in component.params if not (isinstance(about.get(p), str) and "; " in about[p])]
    assert missing == [], f"{family} {name} ({component.source}): no 'meaning; source' in `about` for {missing}"


def test_a_miner_given_to_a_loss_that_takes_none_is_refused(tmp_path):
    config = _catalogue_with(
        tmp_path,
        "methods.yaml",
        "loss: {name: contrastive, pos_margin: 1.0, neg_margin: 0.5}",
        "loss: {name: proxy_nca}\n  miner: {name: semihard, margin: 0.1}",
    )
    with pytest.raises(ConfigError, match=r"methods.yaml: method contrastive.miner: loss 'proxy_nca' takes no miner"):
        Plan.load(config, {"preset": "smoke"})


def _catalogue_with(tmp_path, file: str, old: str, new: str):
    shutil.copytree(CONFIG_DIR, tmp_path / "config")
    path = tmp_path / "config" / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return tmp_path / "config"


MS_LOSS = (
    "loss: {name: multi_similarity, alpha: 2.0, beta: 50.0, gamma: 0.5}\n"
    "  miner: {name: multi_similarity, epsilon: 0.1}"
)
MISSPELT = [
    (
        "methods.yaml",
        MS_LOSS,
        MS_LOSS.replace("name: multi_similarity, alpha", "name: multi_similarty, alpha"),
        "methods.yaml: method ms.loss: unknown loss 'multi_similarty' (did you mean 'multi_similarity'?)",
    ),
    (
        "methods.yaml",
        MS_LOSS,
        MS_LOSS.replace("alpha: 2.0", "alpah: 2.0"),
        "methods.yaml: method ms.loss.alpah: loss 'multi_similarity' has no parameter 'alpah' (did you mean 'alpha'?)",
    ),
    (
        "methods.yaml",
        MS_LOSS,
        MS_LOSS.replace("{name: multi_similarity, epsilon", "{name: multi_simliarity, epsilon"),
        "methods.yaml: method ms.miner: unknown miner 'multi_simliarity' (did you mean 'multi_similarity'?)",
    ),
    (
        "methods.yaml",
        MS_LOSS,
        MS_LOSS.replace("epsilon: 0.1", "epsilom: 0.1"),
        "methods.yaml: method ms.miner.epsilom: miner 'multi_similarity' has no parameter 'epsilom' "
        "(did you mean 'epsilon'?)",
    ),
    (
        "methods.yaml",
        "loss: {name: contrastive, pos_margin: 1.0, neg_margin: 0.5}   # pos_margin 1: ms eq. 5's positive term\n"
        "  sampler: m_per_class",
        "loss: {name: contrastive, pos_margin: 1.0, neg_margin: 0.5}\n  sampler: m_per_clas",
        "methods.yaml: method contrastive.sampler: unknown sampler 'm_per_clas' (did you mean 'm_per_class'?)",
    ),
    (
        "methods.yaml",
        "search: {loss.pos_margin: {low: 0, high: 1}",
        "search: {loss.pos_margn: {low: 0, high: 1}",
        "methods.yaml: method contrastive.search: loss.pos_margn: loss 'contrastive' has no parameter 'pos_margn'",
    ),
]


@pytest.mark.parametrize("file, old, new, said", MISSPELT, ids=[m[3].split(": ", 1)[1][:40] for m in MISSPELT])
def test_a_misspelt_component_or_parameter_is_refused_naming_file_key_and_the_closest_name(
    tmp_path, file, old, new, said
):
    config = _catalogue_with(tmp_path, file, old, new)
    with pytest.raises(ConfigError) as error:
        Plan.load(config, {"preset": "smoke"})
    assert said in str(error.value)


BAD_VALUES = [
    (
        MS_LOSS.replace("alpha: 2.0", "alpha: thirty-two"),
        "methods.yaml: method ms.loss.alpha: 'thirty-two' is not a float; "
        "loss 'multi_similarity' takes alpha: float, > 0",
    ),
    (
        MS_LOSS.replace("alpha: 2.0", "alpha: -32"),
        "methods.yaml: method ms.loss.alpha: -32 is outside what it allows; "
        "loss 'multi_similarity' takes alpha: float, > 0",
    ),
    (MS_LOSS.replace("alpha: 2.0", "alpha: .nan"), "method ms.loss.alpha: nan is not a finite number"),
    (
        MS_LOSS.replace("gamma: 0.5", "gamma: 1.5"),
        "method ms.loss.gamma: 1.5 is outside what it allows; loss 'multi_similarity' takes gamma: float, [-1, 1]",
    ),
    (MS_LOSS.replace("alpha: 2.0", "alpha: true"), "method ms.loss.alpha: True is not a float"),
    (
        MS_LOSS.replace("epsilon: 0.1", "epsilon: -0.1"),
        "method ms.miner.epsilon: -0.1 is outside what it allows; miner 'multi_similarity' takes epsilon: float, >= 0",
    ),
]


@pytest.mark.parametrize("new, said", BAD_VALUES, ids=[b[1].split("method ")[1][:40] for b in BAD_VALUES])
def test_a_parameter_value_of_the_wrong_kind_or_out_of_range_is_refused_when_the_plan_loads(tmp_path, new, said):
    config = _catalogue_with(tmp_path, "methods.yaml", MS_LOSS, new)
    with pytest.raises(ConfigError) as error:
        Plan.load(config, {"preset": "smoke"})
    assert said in str(error.value)


def test_a_choice_a_search_range_and_an_integer_are_checked_too(tmp_path):
    for old, new, said in (
        (
            "name: dro_topk, k_per_anchor: 2.0, base: margin",
            "name: dro_topk, k_per_anchor: 2.0, base: margni",
            "'margni' is outside what it allows; "
            "loss 'dro_topk' takes base: str, one of 'margin', 'binomial', 'linear'",
        ),
        (
            "search: {loss.pos_margin: {low: 0, high: 1}",
            "search: {loss.pos_margin: {low: 0, high: 2}",
            "method contrastive.search.loss.pos_margin: 2 is outside what it allows",
        ),
    ):
        folder = tmp_path / new[:8].replace(" ", "_").replace(":", "")
        folder.mkdir()
        config = _catalogue_with(folder, "methods.yaml", old, new)
        with pytest.raises(ConfigError) as error:
            Plan.load(config, {"preset": "smoke"})
        assert said in str(error.value)
    component = declared.components("loss")["fastap"]
    with pytest.raises(
        ConfigError,
        match=r"num_bins: 10.5 is not an int; "
        r"loss 'fastap' takes num_bins: int, >= 2",
    ):
        declared.check_values(component, {"num_bins": 10.5}, "x", "loss")
    declared.check_values(component, {"num_bins": 20, "bins": "code"}, "x", "loss")


@pytest.mark.parametrize("family, name", [(f, n) for f, r in REGISTRIES.items() for n in r.names()])
def test_the_declared_types_are_the_constructors_annotations_and_every_default_is_allowed(family, name):
    """What the plan checks is what the constructor says: its annotations, read without import,
    and its own defaults lie within its limits."""
    component = declared.components(family)[name]
    implementation = REGISTRIES[family].get(name)
    hints = {}
    for klass in reversed(getattr(implementation, "__mro__", [implementation])):
        init = klass.__init__ if isinstance(implementation, type) else klass
        hints.update(getattr(init, "__annotations__", {}))
    for param, kind in zip(component.params, component.types):
        annotation = hints.get(param)
        if annotation is None:
            assert kind is None, (param, kind)
            continue
        shown = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
        assert kind == shown.replace("typing.", ""), (param, kind, annotation)
    defaults = _python_defaults(implementation)
    declared.check_values(
        component, {p: defaults[p] for p in component.params if defaults[p] is not None}, name, family
    )


def test_a_misspelt_parameter_of_an_experiments_sweep_is_refused(tmp_path):
    plan = full_plan()
    key, label, part = next(
        (k, v, p)
        for k, e in plan.experiments.items()
        for v, entry in (e.get("sweep") or {}).items()
        for p in ("loss", "miner")
        if entry.get(p)
    )
    param = next(iter(plan.experiments[key]["sweep"][label][part]))
    source = plan.sources[key]
    text = source.read_text()
    start = text.index(f"\n{key}:")
    at = text.index(f"{label}:", start)
    at = text.index(f"{param}:", at)
    config = tmp_path / "config"
    shutil.copytree(CONFIG_DIR, config)
    (config / "experiments" / source.name).write_text(text[:at] + param + "x" + text[at + len(param) :])
    with pytest.raises(
        ConfigError,
        match=rf"{source.name}: experiment {key}.sweep.{label}.{part} \(method \w+\)"
        rf".{param}x: {part} '\w+' has no parameter '{param}x' "
        rf"\(did you mean '{param}'\?\)",
    ):
        Plan.load(config, {"preset": "smoke"})


def test_a_required_parameter_left_out_is_refused_unless_the_run_fills_it(monkeypatch):
    needs = declared.Component(
        "needy", "methods/losses/x.py:1", ("num_classes", "k"), ("num_classes", "k"), False, needs=("num_classes",)
    )
    monkeypatch.setattr(declared, "components", lambda family: {"needy": needs})
    with pytest.raises(ConfigError, match=r"method m.loss: loss 'needy' needs k \(methods/losses/x.py:1\)"):
        declared.check("loss", {"name": "needy"}, "method m.loss")
    declared.check("loss", {"name": "needy", "k": 1}, "method m.loss")  # num_classes: the training's (needs)


def test_snakemake_dry_run_refuses_a_misspelt_loss_parameter_before_any_job(tmp_path):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copy(REPO / "Snakefile", checkout / "Snakefile")
    shutil.copytree(REPO / "workflow", checkout / "workflow")
    methods = checkout / "workflow" / "config" / "methods.yaml"
    methods.write_text(methods.read_text().replace(MS_LOSS, MS_LOSS.replace("alpha: 2.0", "alpah: 2.0"), 1))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(checkout / "Snakefile"),
            "-d",
            str(tmp_path / "work"),
            "-n",
            "--config",
            "preset=smoke",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=python_env(),
    )
    assert result.returncode != 0
    assert "method ms.loss.alpah: loss 'multi_similarity' has no parameter 'alpah' (did you mean 'alpha'?)" in (
        result.stdout + result.stderr
    )
    assert not (tmp_path / "work" / "results").exists()


@pytest.mark.parametrize(
    "scheme, said",
    [
        (
            "{name: profs, pairs: anchored}",
            "scheme.pairs: anchored needs a pair loss; 'proxy_nca' has no pairs to restrict",
        ),
        ("{name: profs, representatives: none, pairs: all, hncm: true, iterations: 1}", None),
    ],
)
def test_what_the_profs_scheme_needs_of_the_loss_is_checked_when_the_plan_loads(tmp_path, scheme, said):
    """M-PROFS (demo: profs.t1 on cub) with ProxyNCA in place of its margin loss: anchored pairs are
    refused (nothing to restrict); HNCM over class centres is accepted (ProxyNCA has them)."""
    text = (CONFIG_DIR / "methods.yaml").read_text()
    old = next(line for line in text.splitlines() if line.startswith("m_profs: {<<: *margin_hard, label: M-PROFS,"))
    new = (
        "m_profs: {label: M-PROFS, loss: {name: proxy_nca}, sampler: m_per_class, train: {optimizer: *beta_sgd, "
        f"scheme: {scheme}}}}}"
    )
    config = _catalogue_with(tmp_path, "methods.yaml", old, new)
    if said is None:
        Plan.load(config, {"preset": "demo"})
        return
    with pytest.raises(ConfigError, match=re.escape(said)):
        Plan.load(config, {"preset": "demo"})


def test_a_misspelt_method_of_an_experiment_is_refused_naming_its_file(tmp_path):
    config = _catalogue_with(tmp_path, "experiments/ms.yaml", "  methods: [ms]\n", "  methods: [mss]\n")
    with pytest.raises(
        ConfigError, match=re.escape("ms.yaml: experiment ms.t2: unknown method 'mss' (did you mean 'ms'?)")
    ):
        Plan.load(config, {"preset": "smoke"})


RC_CUB = "cub: {train: {optimizer: {loss_lr_mult: 604.0}}, loss: {scale: 13.98}}"


@pytest.mark.parametrize(
    "new, said",
    [
        (RC_CUB.replace("scale: 13.98", "scale: -1"), "method proxy_nca_rc.per_dataset.cub.loss.scale: -1 is outside"),
        (
            RC_CUB.replace("scale: 13.98", "scael: 13.98"),
            "proxy_nca_rc.per_dataset.cub.loss.scael: loss 'proxy_nca' has "
            "no parameter 'scael' (did you mean 'scale'?)",
        ),
        (RC_CUB.replace("loss_lr_mult: 604.0", "loss_lr_mult: fast"), "proxy_nca_rc.per_dataset.cub.train"),
        (
            RC_CUB.replace("loss: {", "los: {"),
            "proxy_nca_rc.per_dataset.cub: takes `train` (training settings) and `loss`",
        ),
        (RC_CUB.replace("cub:", "cubb:"), "proxy_nca_rc.per_dataset"),
    ],
)
def test_a_methods_settings_on_one_dataset_are_checked_by_name_and_value(tmp_path, new, said):
    config = _catalogue_with(tmp_path, "methods.yaml", RC_CUB, new)
    with pytest.raises(ConfigError) as error:
        Plan.load(config, {"preset": "smoke"})
    assert said in str(error.value)


def test_a_methods_settings_on_one_dataset_reach_its_runs_there_alone():
    plan = full_plan()
    seen = {}
    for run in plan.runs("suite.modern"):
        if run.base_method == "proxy_nca_rc":
            cfg = plan.resolved(run)
            seen[run.dataset] = (cfg["optimizer"]["loss_lr_mult"], cfg["method"]["loss"]["scale"])
    assert seen == {"cub": (604.0, 13.98), "cars": (443.0, 7.97), "sop": (52.8, 10.73), "inshop": (52.8, 10.73)}


def test_a_users_proxy_loss_inherits_the_declarations_of_num_classes_and_embedding_dim(tmp_path, monkeypatch):
    """A `ProxyLoss` subclass declares only its own parameters: the base's `limits` and `about` of
    num_classes and embedding_dim reach it, read from the source as from Python."""
    (tmp_path / "my_proxies.py").write_text(
        "import torch\n"
        "from dmlbench.methods.losses.base import ProxyLoss\n\n\n"
        "class Mine(ProxyLoss):\n"
        '    limits = {"scale": "> 0"}\n'
        '    about = {"scale": "softmax scale; my paper"}\n\n'
        "    def __init__(self, num_classes: int, embedding_dim: int, scale: float = 10.0):\n"
        "        super().__init__()\n"
        "        self.proxies = torch.nn.Parameter(torch.randn(num_classes, embedding_dim))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    component = declared.external("loss", "my_proxies:Mine", "my_proxies:Mine")
    assert dict(component.limits) == {"num_classes": ">= 2", "embedding_dim": ">= 1", "scale": "> 0"}
    assert set(dict(component.about)) == {"num_classes", "embedding_dim", "scale"}
    assert component.needs == ("num_classes", "embedding_dim") and component.takes_miner is False


@pytest.mark.parametrize(
    "file, old, new, said",
    [
        ("experiments/ms.yaml", "  paper: ms\n", "  paper: msx\n", r"experiment ms\.\w+\.paper: 'msx' is no paper of"),
        (
            "methods.yaml",
            "  paper: ms\n",
            "  paper: mss\n",
            r"method \w+\.paper: 'mss' is no paper of .*did you mean 'ms'",
        ),
    ],
)
def test_a_paper_id_not_in_papers_yaml_is_refused_when_the_plan_loads(tmp_path, file, old, new, said):
    """A typo in `paper:` would leave the paper's certificate on the page, stale (issue 72)."""
    config = _catalogue_with(tmp_path, file, old, new)
    with pytest.raises(ConfigError, match=said):
        Plan.load(config, {"preset": "smoke"})
