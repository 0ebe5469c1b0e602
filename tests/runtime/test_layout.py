"""The runtime's two sides stay apart (DESIGN.md, "The verifier"): what runs in the training
child (runtime/child/, imports torch) and what runs in the parent (everything else: the entry
points, the watchdog, judge/). Checked on the source, so it holds for every code path, not only
the ones a test happens to import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"
HEAVY = ("torch", "torch_xla", "lightning", "pytorch_lightning", "numpy")
SHARED = {
    "spec.py",
    "events.py",
    "errors.py",
    "frames.py",
    "steady.py",
    "trainer_args.py",
    "tpu_layout.py",
}


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module a file imports, at any depth (lazy imports inside functions count too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def _parent_files() -> list[Path]:
    return sorted(p for p in RUNTIME.rglob("*.py") if "child" not in p.relative_to(RUNTIME).parts)


def test_the_layout_has_both_sides() -> None:
    assert (RUNTIME / "child" / "__main__.py").is_file()
    assert (RUNTIME / "judge" / "analysis.py").is_file()
    assert len(_parent_files()) > 10


@pytest.mark.parametrize("path", _parent_files(), ids=lambda p: str(p.relative_to(RUNTIME)))
def test_parent_code_imports_no_torch_and_no_child_module(path: Path) -> None:
    bad = [
        f"{path.name}:{line} imports {name}"
        for line, name in _imports(path)
        if name.split(".")[0] in HEAVY or name.startswith("tpulint.runtime.child")
    ]
    assert not bad, bad


@pytest.mark.parametrize(
    "path",
    sorted(p for p in RUNTIME.glob("*.py") if p.name in SHARED)
    + sorted((RUNTIME / "judge").glob("*.py")),
    ids=lambda p: str(p.relative_to(RUNTIME)),
)
def test_shared_and_judge_code_do_not_reach_into_the_child(path: Path) -> None:
    bad = [
        name
        for _, name in _imports(path)
        if name.startswith(("tpulint.runtime.child", "tpulint.runtime.api"))
    ]
    assert not bad, bad
