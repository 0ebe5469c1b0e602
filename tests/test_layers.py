"""The core's layers go one way, and no module of tpulint/ (with the rule catalogue, installed
as tpulint.rules) imports itself back through others.

The graph is read from the source with `ast`: every `import` statement counts, including the
lazy ones inside functions (a lazy import still runs, later), and `importlib.import_module`
calls with a literal name. Imports under `if TYPE_CHECKING:` do not count: they never run.
The registry loads the rule classes by the names listed in the manifest (as plugins are
loaded from entry points); that is data, not an import statement, and is the one way the
lower layers reach the catalogue.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"tpulint": ROOT / "tpulint", "tpulint.rules": ROOT / "rules"}

# Bottom to top, as a newcomer reads the engine. A module may import its own layer and the
# layers below it, never one above. (`tpulint.runtime`, the verifier, has its own layout test.)
LAYERS: list[tuple[str, set[str]]] = [
    ("data types", {"tpulint", "tpulint.diagnostics", "tpulint.roundtrip"}),
    ("config and registry", {"tpulint.registry", "tpulint.config"}),
    ("rule API", {"tpulint.rule", "tpulint.meta_rules", "tpulint.cst_helpers"}),
    (
        "analysis",
        {
            "tpulint.analysis",
            "tpulint.analysis.imports",
            "tpulint.analysis.modules",
            "tpulint.analysis.project",
            "tpulint.analysis.walker",
            "tpulint.analysis.values",
            "tpulint.analysis.semantic",
            "tpulint.analysis.context",
            "tpulint.analysis.positions",
            "tpulint.yaml_config",
            "tpulint.suppression",
            "tpulint.fixes",
        },
    ),
    ("rules", {"tpulint.rules"}),  # and every tpulint.rules.* module
    ("engine", {"tpulint.engine", "tpulint.deep_stack"}),
    (
        "runner",
        {
            "tpulint.discovery",
            "tpulint.cache",
            "tpulint.project_build",
            "tpulint.runner",
            "tpulint.pool",
            "tpulint.writing",
        },
    ),
    (
        "front ends",
        {
            "tpulint.cli",
            "tpulint.__main__",
            "tpulint.lightning",
            "tpulint.server",
            "tpulint.docs",
            "tpulint.manifest",
            "tpulint.testing",
            "tpulint.reporting",
        },
    ),
]


def _modules() -> dict[str, Path]:
    out = {}
    for package, folder in PACKAGES.items():
        for file in folder.rglob("*.py"):
            parts = list(file.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = file
    return out


MODULES = _modules()


def layer_of(module: str) -> int:
    for index, (_, members) in enumerate(LAYERS):
        for member in members:
            if module == member or (member != "tpulint" and module.startswith(member + ".")):
                return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in tests/test_layers.py")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(name: str) -> str | None:
    """The tpulint module an imported name refers to (a module, else its package)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str) -> set[str]:
    file = MODULES[module]
    tree = ast.parse(file.read_text(encoding="utf-8"))
    package = module if file.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - (node.level - 1)])
                base = f"{parent}.{base}" if base else parent
            for alias in node.names:
                found.add(f"{base}.{alias.name}")  # a submodule, or a name in `base`
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    edges = {_resolve(name) for name in found}
    return {e for e in edges if e is not None and e != module}


GRAPH = {module: imports_of(module) for module in MODULES}


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_layers_go_one_way() -> None:
    upward = [
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for module, targets in GRAPH.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    ]
    assert not upward, "\n".join(sorted(upward))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def connect(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in graph:
        if node not in index:
            connect(node)
    return out


def test_no_import_cycles() -> None:
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_lazy_imports() -> None:
    # cli imports the runner inside a function; engine imports nothing of the runner.
    assert "tpulint.runner" in GRAPH["tpulint.cli"]
    assert "tpulint.engine" in GRAPH["tpulint.runner"]
    assert "tpulint.runner" not in GRAPH["tpulint.engine"]


def test_yaml_support_is_one_module_the_engine_calls() -> None:
    users = {m for m, targets in GRAPH.items() if "tpulint.yaml_config" in targets}
    # The rule API and the suppression parser do not reach into it; rules read its types.
    assert "tpulint.rule" not in users and "tpulint.suppression" not in users
    assert "tpulint.engine" in users
    assert all(
        m.startswith("tpulint.rules") or m in {"tpulint.engine", "tpulint.server"} for m in users
    ), users
