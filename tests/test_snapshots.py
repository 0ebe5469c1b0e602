"""Whole-file fixtures: every rule at once on realistic files, compared with snapshot files
(the `full` report and the diff of `fix --unsafe-fixes`). Regenerate after an intended change
with `pytest tests/test_snapshots.py --update-snapshots` and review the diff."""

from __future__ import annotations

import difflib
from pathlib import Path

import libcst as cst
import pytest

from tpulint.config.settings import Config
from tpulint.engine.source import check_source, fix_source
from tpulint.reporting import ReportOptions, render

SNAPSHOTS = Path(__file__).parent / "snapshots"
FIXTURES = sorted(p for p in SNAPSHOTS.iterdir() if p.suffix in (".py", ".yaml"))
CONFIG = Config.from_mapping({"select": ["ALL"]})


def render_snapshot(path: Path) -> str:
    source = path.read_text(encoding="utf-8")
    name = path.name
    diagnostics = check_source(source, name, CONFIG)
    options = ReportOptions(unsafe_fixes=True, files_checked=1, source_lookup=lambda _: source)
    report = render("full", diagnostics, options)
    fixed = fix_source(source, name, CONFIG, unsafe=True)
    if path.suffix == ".py":
        cst.parse_module(fixed.source)  # every fixed file re-parses
    again = fix_source(fixed.source, name, CONFIG, unsafe=True)
    assert again.source == fixed.source, f"{name}: a second fix run changed the code"
    diff = "".join(
        difflib.unified_diff(
            source.splitlines(keepends=True),
            fixed.source.splitlines(keepends=True),
            f"a/{name}",
            f"b/{name}",
        )
    )
    remaining = "".join(f"{d.start.line}:{d.start.column} {d.code}\n" for d in fixed.remaining)
    return (
        f"# tpulint check --select ALL --output-format full {name}\n\n{report}"
        f"# tpulint fix --select ALL --unsafe-fixes {name}\n\n{diff}\n"
        f"# remaining after the fix\n\n{remaining}"
    )


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_snapshot(path: Path, update_snapshots: bool) -> None:
    snapshot = path.with_suffix(path.suffix + ".snap")
    actual = render_snapshot(path)
    if update_snapshots or not snapshot.exists():
        snapshot.write_text(actual, encoding="utf-8")
        if not update_snapshots:
            pytest.fail(f"{snapshot.name} did not exist and was written: review and commit it")
        return
    expected = snapshot.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                "snapshot",
                "actual",
            )
        )
        pytest.fail(f"{snapshot.name} differs (run with --update-snapshots if intended):\n{diff}")
