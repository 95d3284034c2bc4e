"""The package's house plan: each part imports only from the layers below it (docs/layout.md)."""

import ast
from pathlib import Path

from conftest import REPO

# lowest first; a part may import from its own layer's other parts and from every layer below
LAYERS = [
    {"core"},
    {"run_config"},
    {"data", "models", "methods", "plots"},
    {"evaluation"},
    {"training"},
    {"analysis", "fair", "verdicts", "knobs"},
    {"config"},
    {"report", "preflight", "doctor", "orchestration"},
    {"cli", "commands", "__main__"},
]
LAYER_OF = {part: n for n, parts in enumerate(LAYERS) for part in parts}


def part_of(module: str) -> str:
    """`dmlbench.evaluation.ranking` → `evaluation`; `dmlbench` itself → ''."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def imports_of(path: Path) -> set[str]:
    """Every dmlbench module named by an import of `path` (at the top or inside a function)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "dmlbench":
            if node.module == "dmlbench":
                found |= {f"dmlbench.{alias.name}" for alias in node.names}
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "dmlbench"}
    return found


def modules():
    package = REPO / "dmlbench"
    for path in sorted(package.rglob("*.py")):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        yield name, path


def test_every_part_of_the_package_has_a_layer():
    parts = {part_of(name) for name, _ in modules()} - {"__init__", ""}
    assert parts == set(LAYER_OF), sorted(parts ^ set(LAYER_OF))


def test_no_module_imports_from_a_higher_layer():
    upward = []
    for name, path in modules():
        own = part_of(name)
        if own not in LAYER_OF:
            continue
        for target in imports_of(path):
            other = part_of(target)
            if other in LAYER_OF and LAYER_OF[other] > LAYER_OF[own]:
                upward.append(f"{name} imports {target}")
    assert not upward, "\n".join(upward)


def test_the_check_sees_an_upward_import(tmp_path):
    """The checker itself: a module that imports from above is found."""
    module = tmp_path / "probe.py"
    module.write_text("def f():\n    from dmlbench.report import index\n")
    assert imports_of(module) == {"dmlbench.report"}
    assert LAYER_OF[part_of("dmlbench.report")] > LAYER_OF[part_of("dmlbench.data.manifest")]


def module_graph() -> dict[str, set[str]]:
    """Module → the package's modules it imports (at the top or inside a function); `from
    package import module` counts as importing that module."""
    names = {name.removesuffix(".__init__") for name, _ in modules()}
    graph = {}
    for name, path in modules():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "dmlbench":
                for alias in node.names:
                    inner = f"{node.module}.{alias.name}"
                    found.add(inner if inner in names else node.module)
            elif isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names if alias.name in names}
        graph[name.removesuffix(".__init__")] = found & names
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one module (Tarjan), each sorted."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while not part or part[-1] != v:
                part.append(stack.pop())
                on.discard(part[-1])
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_inside_a_part():
    """No module reaches itself through imports, a function-local one included (the warm-start
    server, once in a circle with the command line, is handed the command line's `main`)."""
    found = cycles(module_graph())
    assert not found, found


def test_the_cycle_check_sees_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_module_is_under_300_lines():
    """Small modules with one job each: a module that grows past 300 lines is split."""
    long = [f"{name}: {n}" for name, path in modules() if (n := len(path.read_text().splitlines())) >= 300]
    assert not long, long


def test_the_conda_environment_lists_every_dependency_of_the_package():
    """envs/dmlbench.yaml (`--software-deployment-method conda`) carries pyproject.toml's dependencies
    under their conda-forge names."""
    import re
    import tomllib

    import yaml

    conda_names = {"torch": "pytorch", "duckdb": "python-duckdb"}
    wanted = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {conda_names.get(n, n) for n in (re.match(r"[A-Za-z0-9_.-]+", d).group(0).lower() for d in wanted)}
    listed = {
        re.match(r"[A-Za-z0-9_.-]+", d).group(0).lower()
        for d in yaml.safe_load((REPO / "envs" / "dmlbench.yaml").read_text())["dependencies"]
        if isinstance(d, str)
    }
    assert names - listed == set(), f"add to envs/dmlbench.yaml: {sorted(names - listed)}"
