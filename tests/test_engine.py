"""The engine API: check_source / fix_source, positions, fix application, imports, and the
guards that keep a buggy rule or a bad fix from doing damage."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

import tpulint.engine.source as engine
from tests.helpers import LEGACY_TRAINER, make_project, run_cli
from tpulint.analysis.fixes import apply_fixes, import_insertion_index
from tpulint.analysis.positions import PositionIndex
from tpulint.config.settings import Config
from tpulint.datatypes.diagnostics import Applicability, Diagnostic
from tpulint.rule_api.rule import FixSpec, ImportSpec, Invalid, Rule, Valid


class _BrokenFix(Rule):
    """A rule whose fix produces code that does not parse."""

    code = "TPU998"
    name = "broken-fix"
    summary = "Test rule"
    fix_applicability = Applicability.SAFE
    requires = ("boom",)
    VALID = (Valid("x = 1\n"),)
    INVALID = (Invalid("boom()\n"),)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "boom":
            self.report(node, "boom", replacement=cst.parse_statement("pass"))


class _Crashing(Rule):
    code = "TPU997"
    name = "crashing-rule"
    summary = "Test rule"
    requires = ("crash",)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "crash":
            raise ZeroDivisionError("division by zero")


@pytest.fixture
def extra_rules(monkeypatch: pytest.MonkeyPatch):
    """The catalogue (manifest and classes) with the two test rules added."""
    from tpulint.config import registry
    from tpulint.manifest import info_of

    extra = (_BrokenFix, _Crashing)
    infos = tuple(sorted((*registry.catalogue(), *map(info_of, extra)), key=lambda r: r.code))
    rules = (*registry.all_rules(), *extra)
    registry.clear_caches()
    monkeypatch.setattr(registry, "catalogue", lambda: infos)
    monkeypatch.setattr(engine, "catalogue", lambda: infos)
    monkeypatch.setattr(registry, "all_rules", lambda: rules)
    yield
    monkeypatch.undo()
    registry.clear_caches()


def test_a_fix_that_does_not_parse_is_never_applied(extra_rules) -> None:
    config = Config.from_mapping({"select": ["TPU998"]})
    source = "x = boom()\n"
    found = engine.check_source(source, "m.py", config)
    assert [d.code for d in found] == ["TPU998"]
    result = engine.fix_source(source, "m.py", config)
    assert result.source == source
    assert result.fixed == []
    assert result.error is not None and "does not parse" in result.error


def test_a_crashing_rule_is_an_internal_error_not_a_crash(extra_rules, tmp_path: Path) -> None:
    config = Config.from_mapping({"select": ["TPU997"]})
    with pytest.raises(engine.InternalError, match="ZeroDivisionError: division by zero"):
        engine.check_source("crash()\n", "m.py", config)
    root = make_project(tmp_path / "p", {"a.py": "crash()\n", "b.py": LEGACY_TRAINER})
    result = run_cli(["check", ".", "--select", "TPU997,TPU001", "-j", "1"], root)
    assert result.exit_code == 2
    assert (
        "tpulint: error: internal error in a.py: ZeroDivisionError: division by zero"
        in result.stderr
    )
    assert "b.py:3:21: TPU001" in result.stdout  # the other files are still checked


def test_positions_count_characters_not_bytes() -> None:
    source = textwrap.dedent(
        """\
        import lightning as L


        class Model(L.LightningModule):
            def training_step(self, batch, batch_idx):
                note = "héllo wörld"; return batch.sum().item()
        """
    )
    [d] = engine.check_source(source, "m.py", Config.from_mapping({"select": ["TPU101"]}))
    line = source.splitlines()[d.start.line - 1]
    assert line[d.start.column - 1 : d.end.column - 1] == "batch.sum().item()"


def test_position_index_spans_exclude_parentheses_and_comments() -> None:
    module = cst.parse_module("x = (  # c\n    foo(1)\n)\n")
    call = module.body[0].body[0].value
    positions = PositionIndex(module)
    start, end = positions.range(call)
    assert (start.line, start.column, end.line, end.column) == (2, 5, 2, 11)
    span = positions.span(call)
    assert positions.code[span.outer_start : span.outer_end].startswith("(")


def _parents_of(module: cst.Module) -> dict[int, cst.CSTNode]:
    from tpulint.analysis.walker import iter_children

    parents: dict[int, cst.CSTNode] = {}
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        for child in iter_children(node):
            parents[id(child)] = node
            stack.append(child)
    return parents


def test_position_index_places_a_method_whose_text_occurs_twice() -> None:
    # The same method in two classes: its own text is not unique, its class's is; the spans
    # must be those a whole-module pass gives (the second class's copy, not the first's).
    source = (
        "class A:\n    def step(self, x):\n        return x.item()\n\n"
        "class B:\n    def step(self, x):\n        return x.item()\n"
    )
    module = cst.parse_module(source)
    parents = _parents_of(module)
    second = module.body[1].body.body[0]
    call = second.body.body[0].body[0].value
    by_function = PositionIndex(module, source)
    assert by_function.resolve_in_function(second, [call, second], parents)
    by_module = PositionIndex(module, source)
    by_module.resolve_in_module([call, second])
    assert by_function.span(call) == by_module.span(call)
    assert by_function.span(second) == by_module.span(second)
    assert by_function.range(call)[0].line == 7


def test_position_index_gives_up_when_no_enclosing_text_is_unique() -> None:
    source = "def step(x):\n    return x\ndef step(x):\n    return x\n"
    module = cst.parse_module(source)
    second = module.body[1]
    positions = PositionIndex(module, source)
    assert not positions.resolve_in_function(second, [second], _parents_of(module))
    positions.resolve([second], _parents_of(module))  # the whole module places it
    assert positions.range(second)[0].line == 3


def test_apply_fixes_adds_and_removes_imports() -> None:
    module = cst.parse_module(
        '"""Doc."""\nimport os\nfrom torch.utils.data import DataLoader, DistributedSampler\n\n'
        "def f(ds):\n    return DistributedSampler(ds)\n"
    )
    call = module.body[3].body.body[0].body[0].value
    fix = FixSpec(
        Applicability.SAFE,
        "test",
        [(call, cst.parse_expression("xr.world_size()"))],
        add_imports=(ImportSpec("torch_xla.runtime", alias="xr"),),
        remove_unused_imports=("DistributedSampler",),
    )
    fixed = apply_fixes(module, [fix])
    assert fixed.code == (
        '"""Doc."""\nimport os\nfrom torch.utils.data import DataLoader\n'
        "import torch_xla.runtime as xr\n\n"
        "def f(ds):\n    return xr.world_size()\n"
    )
    # Already imported: nothing added twice.
    again = apply_fixes(
        cst.parse_module(fixed.code),
        [FixSpec(Applicability.SAFE, "t", [], add_imports=fix.add_imports)],
    )
    assert again.code == fixed.code


def test_import_insertion_index() -> None:
    assert import_insertion_index(cst.parse_module("x = 1\n")) == 0
    assert import_insertion_index(cst.parse_module('"""d"""\nx = 1\n')) == 1
    assert import_insertion_index(cst.parse_module("import a\nimport b\nx = 1\nimport c\n")) == 2


def test_fix_loop_reaches_a_fixed_point() -> None:
    source = (
        "import lightning as L\n"
        + "\n".join(f"t{i} = L.Trainer(tpu_cores={i + 1})" for i in range(30))
        + "\n"
    )
    result = engine.fix_source(source, "m.py", Config.from_mapping({"select": ["TPU001"]}))
    assert len(result.fixed) == 30
    assert "tpu_cores" not in result.source
    cst.parse_module(result.source)


def test_diagnostics_round_trip_through_json() -> None:
    [d] = engine.check_source(LEGACY_TRAINER, "t.py", Config.from_mapping({"select": ["TPU001"]}))
    assert Diagnostic.from_json(d.to_json()) == d
    assert d.fix is not None and d.fix.edits


def test_edits_equal_the_applied_fix() -> None:
    """Applying a diagnostic's text edits gives the same code as fix_source."""
    config = Config.from_mapping({"select": ["TPU"]})
    source = (
        Path(__file__)
        .resolve()
        .parent.parent.joinpath("examples", "tpu_unready", "model.py")
        .read_text()
    )
    found = [d for d in engine.check_source(source, "model.py", config) if d.fixable(False)]
    assert found
    for d in found:
        single = engine.apply_text_edits(source, [d])[0]
        cst.parse_module(single)
    combined, applied = engine.apply_text_edits(source, found)
    assert len(applied) == len(found)
    assert combined == engine.fix_source(source, "model.py", config).source
