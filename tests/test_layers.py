"""The core's layers go one way, its folders show them, and no module of tpulint/ (with the
rule catalogue, installed as tpulint.rules) imports itself back through others.

A module's layer is its folder: tpulint/datatypes/ is the data types, tpulint/engine/ the
engine, and so on; the modules at the top of tpulint/ (cli, __main__, server, docs, manifest,
testing) and tpulint/reporting/ are the front ends, and the rule catalogue (the top-level
rules/, installed as tpulint.rules) is the rules layer. Only the order of the folders is
written here; which module is in which layer is read from the tree, so a new module needs no
entry, and a new folder must be given its place.

The graph is read from the source with `ast`: every `import` statement counts, including the
lazy ones inside functions (a lazy import still runs, later), and `importlib.import_module`
calls with a literal name. Imports under `if TYPE_CHECKING:` do not count: they never run.
The registry loads the rule classes by the names listed in the manifest (as plugins are
loaded from entry points); that is data, not an import statement, and is the one way the
lower layers reach the catalogue.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"tpulint": ROOT / "tpulint", "tpulint.rules": ROOT / "rules"}

# Bottom to top, as a newcomer reads the engine: each layer and its folders under tpulint/
# ("" is the top of tpulint/ itself; "rules" is the top-level rules/, installed there). A
# module may import its own layer and the layers below it, never one above. (`tpulint.runtime`,
# the verifier, has its own layout test: tests/runtime/test_layout.py.)
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("data types", ("datatypes",)),
    ("config and registry", ("config",)),
    ("rule API", ("rule_api",)),
    ("analysis", ("analysis",)),
    ("rules", ("rules",)),
    ("engine", ("engine",)),
    ("runner", ("runner",)),
    ("front ends", ("", "reporting")),
]
# The package itself (`tpulint/__init__.py`: the version and the lazily loaded public API)
# imports nothing at run time, so every layer may read `tpulint.__version__`.
PACKAGE_ROOT = "tpulint"


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


def folder_of(module: str) -> str:
    """The folder of tpulint/ a module lives in: its first folder below tpulint/ ("rules" for
    the catalogue), "" for the modules at the top."""
    file = MODULES[module]
    if module == "tpulint.rules" or module.startswith("tpulint.rules."):
        return "rules"
    relative = file.relative_to(PACKAGES["tpulint"]).parts
    return relative[0] if len(relative) > 1 else ""


def layer_of(module: str) -> int:
    if module == PACKAGE_ROOT:
        return -1
    folder = folder_of(module)
    for index, (_, folders) in enumerate(LAYERS):
        if folder in folders:
            return index
    raise AssertionError(
        f"{module} is in tpulint/{folder}/, which is no layer: give the folder its place in "
        "LAYERS in tests/test_layers.py"
    )


def layer_name(module: str) -> str:
    index = layer_of(module)
    return "package root" if index < 0 else LAYERS[index][0]


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


def imported_names(module: str) -> set[str]:
    """Every dotted name `module` imports (a module, or a name in a module)."""
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
    return found


def imports_of(module: str) -> set[str]:
    edges = {_resolve(name) for name in imported_names(module)}
    return {e for e in edges if e is not None and e != module}


GRAPH = {module: imports_of(module) for module in MODULES}


@functools.cache
def _top_level_names(module: str) -> set[str]:
    """The names a module binds at its top level (`__getattr__` stands for any name)."""
    names: set[str] = set()
    pending = list(ast.parse(MODULES[module].read_text(encoding="utf-8")).body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.If, ast.Try)):
            pending.extend([*node.body, *node.orelse, *getattr(node, "finalbody", [])])
    return names


def test_every_import_of_tpulint_names_something_that_exists() -> None:
    # A module moved without its importers fixed fails here, lazy imports included (they
    # would otherwise fail only when the line runs).
    missing = []
    for module in MODULES:
        for name in imported_names(module):
            if not name.startswith("tpulint.") or name.startswith("tpulint.runtime"):
                continue
            base, _, attribute = name.rpartition(".")
            if name in MODULES or (
                base in MODULES and ({attribute, "__getattr__"} & _top_level_names(base))
            ):
                continue
            missing.append(f"{module} imports {name}")
    assert not missing, "\n".join(sorted(missing))


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_layers_go_one_way() -> None:
    upward = [
        f"{module} ({layer_name(module)}) imports {target} ({layer_name(target)})"
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
    assert "tpulint.runner.paths" in GRAPH["tpulint.cli"]
    assert "tpulint.engine.source" in GRAPH["tpulint.runner.paths"]
    assert "tpulint.runner.paths" not in GRAPH["tpulint.engine.source"]


def test_yaml_support_is_one_module_the_engine_calls() -> None:
    users = {m for m, targets in GRAPH.items() if "tpulint.analysis.yaml_config" in targets}
    # The rule API and the suppression parser do not reach into it; rules read its types.
    assert "tpulint.rule_api.rule" not in users and "tpulint.analysis.suppression" not in users
    assert "tpulint.engine.source" in users
    assert all(
        m.startswith("tpulint.rules")
        or m in {"tpulint.engine.source", "tpulint.engine.yaml_files", "tpulint.server"}
        for m in users
    ), users


def test_the_package_root_imports_nothing() -> None:
    # What lets every layer import `tpulint` for its version.
    assert GRAPH[PACKAGE_ROOT] == set()


def test_the_layers_are_folders_that_say_which_layer_they_are() -> None:
    folders = {p.name for p in PACKAGES["tpulint"].iterdir() if (p / "__init__.py").is_file()} | {
        "",
        "rules",
    }
    assert folders == {f for _, fs in LAYERS for f in fs}
    # Each layer's own package says its place, as the docs and DESIGN.md describe it.
    for number, (name, fs) in enumerate(LAYERS, start=1):
        folder = fs[0]
        if folder in ("", "rules"):
            continue
        doc = ast.get_docstring(
            ast.parse((PACKAGES["tpulint"] / folder / "__init__.py").read_text())
        )
        assert doc and doc.startswith(f"Layer {number}, {name}"), (folder, doc)


def _package_folders() -> dict[str, Path]:
    roots = {**PACKAGES, "tpulint.runtime": ROOT / "runtime"}
    out = {}
    for package, folder in roots.items():
        for init in folder.rglob("__init__.py"):
            parts = init.parent.relative_to(folder).parts
            out[".".join([package, *parts])] = init.parent
    return out


def test_every_package_is_installed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert sorted(config["tool"]["setuptools"]["packages"]) == sorted(_package_folders())


# --- the rule catalogue's layout ----------------------------------------------------------

RULES = PACKAGES["tpulint.rules"]


def test_the_top_of_rules_is_only_the_registry_glue() -> None:
    from tpulint.rules import FAMILIES

    entries = {p.name for p in RULES.iterdir() if p.name != "__pycache__"}
    assert entries == {"__init__.py", "shared", "rewrite", *FAMILIES}


def test_every_rule_module_is_one_rule_named_after_it() -> None:
    from tpulint.rules import FAMILIES, HELPERS

    code = re.compile(r"^\s+code = \"(TPU\d{3})\"", re.MULTILINE)
    name = re.compile(r"^\s+name = \"([a-z0-9-]+)\"", re.MULTILINE)
    seen = 0
    for family in FAMILIES:
        for file in sorted((RULES / family).glob("*.py")):
            if file.stem in ("__init__", HELPERS):
                continue
            text = file.read_text(encoding="utf-8")
            assert len(code.findall(text)) == 1, f"{file}: one rule per module"
            assert name.findall(text)[0].replace("-", "_") == file.stem, file
            seen += 1
    from tpulint.rules import ALL_RULES

    assert seen == len(ALL_RULES)
    for rule in ALL_RULES:
        family, module = rule.__module__.split(".")[-2:]
        assert module == rule.name.replace("-", "_") and family in FAMILIES, rule
