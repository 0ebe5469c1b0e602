"""Whole-project fixtures: small multi-file projects under tests/projects/ (a model, a losses
module, a metrics module, a callback, a launching script), checked through the real runner
with the project model, compared with snapshot files. Findings in helpers name the chain that
makes them hot across files; the false-positive shapes of the fixtures stay silent.
Regenerate after an intended change with `pytest tests/test_project_snapshots.py
--update-snapshots` and review the diff."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from tpulint.config.settings import Config
from tpulint.reporting import ReportOptions, render
from tpulint.reporting.text import summary
from tpulint.runner.paths import check_paths, fix_paths

PROJECTS = Path(__file__).parent / "projects"
FIXTURES = sorted(p for p in PROJECTS.iterdir() if p.is_dir())


def render_project(root: Path) -> str:
    # the preview rules these projects were written around, by exact code
    config = Config.from_mapping(
        {
            "select": ["ALL", "TPU006", "TPU109"],
            "preview": True,
            "explicit-preview-rules": True,
        },
        root=root,
    )
    run = check_paths([str(root)], config, use_cache=False, jobs=1)
    assert not run.internal_errors, run.internal_errors
    prefix = str(root) + "/"
    found = [d.with_path(str(Path(d.path).resolve()).replace(prefix, "")) for d in run.diagnostics]
    diagnostics = [d for d in found if config.shows(d)]
    left_out = [d for d in found if not config.shows(d)]
    sources = {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in root.rglob("*.py")}
    options = ReportOptions(
        unsafe_fixes=True,
        files_checked=run.checked,
        source_lookup=lambda path: sources.get(path),
        outside_scope=len(left_out),
    )
    report = render("full", diagnostics, options).replace(prefix, "")
    report += summary(diagnostics, options) + "\n"
    if left_out:
        # What `--scope all` adds, with why each is outside the default scope.
        report += "# left out by the default scope (tpulint check --scope all adds them)\n\n"
        report += render("text", left_out, options) + "\n"
    fixed = fix_paths([str(root)], config, unsafe=True, apply=False, use_cache=False, jobs=1)
    diffs = []
    for outcome in sorted(fixed.files, key=lambda f: f.path):
        if outcome.fix is None or not outcome.fix.changed:
            continue
        name = str(Path(outcome.path).resolve()).replace(prefix, "")
        diffs.append(
            "".join(
                difflib.unified_diff(
                    (outcome.original or "").splitlines(keepends=True),
                    outcome.fix.source.splitlines(keepends=True),
                    f"a/{name}",
                    f"b/{name}",
                )
            )
        )
    return (
        f"# tpulint check --select ALL --output-format full {root.name}\n\n{report}"
        f"# tpulint fix --select ALL --unsafe-fixes {root.name}\n\n" + "".join(diffs)
    )


@pytest.mark.parametrize("root", FIXTURES, ids=[p.name for p in FIXTURES])
def test_project_snapshot(root: Path, update_snapshots: bool) -> None:
    snapshot = root.with_suffix(".snap")
    actual = render_project(root)
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


def test_a_helper_checked_alone_knows_its_callers(tmp_path: Path) -> None:
    """One named file (or stdin with --stdin-filename): the project is the file's package."""
    from tests.helpers import run_cli

    root = PROJECTS / "two_files"
    result = run_cli(["check", "--no-cache", "pkg/losses.py"], root)
    assert "TPU202 `c[~eye.bool()]` in `off_diag` (called from training_step via" in result.stdout
    assert "pkg/model.py:16)" in result.stdout
    source = (root / "pkg" / "losses.py").read_text()
    result = run_cli(["check", "--stdin-filename", "pkg/losses.py", "-"], root, stdin=source)
    assert "called from training_step via pkg/model.py:16" in result.stdout
