"""Runtime tests: `tpulint verify` on real torch_xla with 8 emulated cores (PJRT CPU).

Tests marked `runtime` need torch, torch_xla and lightning. Without them they skip, with the
reason, unless TPULINT_REQUIRE_XLA=1 (CI sets it): then a missing or broken torch_xla is a
failure, so the suite can never pass in CI by skipping.

Each scenario trains once (a module-scoped fixture in its test module) and every assertion
about it reads that one report. The wall time of every verify run is printed at the end.

Verdict scenarios run in every layout of verify_helpers.LAYOUTS (the cores as threads, and as
a v5e-8's processes); TPULINT_TEST_LAYOUTS=threads (a comma-separated list) runs only those,
for a quicker local run. Scenarios marked `threads_only` run in the process layout only with
TPULINT_TEST_ALL_LAYOUTS=1 (verify_helpers.py says why).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from verify_helpers import (
    CORES,
    LAYOUTS,
    ROOT,
    SESSION_MARKER,
    SESSION_VARIABLE,
    THREADS,
    every_scenario_in_every_layout,
)

_WALL_TIMES: list[tuple[str, float]] = []
_XLA_STATUS: dict[str, str | None] = {}


def _xla_problem() -> str | None:
    """None when torch_xla and lightning import; else why not. Checked in a subprocess once:
    this process must not import torch_xla (nor wait for it in every test)."""
    if "problem" not in _XLA_STATUS:
        probe = subprocess.run(
            [sys.executable, "-c", "import torch_xla"],
            capture_output=True,
            text=True,
            env={**os.environ, "PJRT_DEVICE": "CPU"},
            timeout=300,
        )
        lines = probe.stderr.strip().splitlines()
        _XLA_STATUS["problem"] = (
            None if probe.returncode == 0 else (lines[-1] if lines else "import failed")
        )
    return _XLA_STATUS["problem"]


@pytest.fixture(scope="session")
def xla() -> None:
    """Depend on this (directly or through a scenario fixture) to need torch_xla."""
    problem = _xla_problem()
    if problem is None:
        return
    message = f"torch_xla is not usable ({problem}); install it with pip install 'tpulint[xla]'"
    if os.environ.get("TPULINT_REQUIRE_XLA") == "1":
        pytest.fail(f"TPULINT_REQUIRE_XLA=1: {message}", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session", autouse=True)
def _mark_this_sessions_processes() -> Iterator[None]:
    """Every verify child this session starts carries the session's marker in its environment
    (verify_helpers.child_processes looks for it)."""
    previous = os.environ.get(SESSION_VARIABLE)
    os.environ[SESSION_VARIABLE] = SESSION_MARKER
    yield
    if previous is None:
        os.environ.pop(SESSION_VARIABLE, None)
    else:
        os.environ[SESSION_VARIABLE] = previous


@pytest.fixture(autouse=True)
def _runtime_marker_needs_xla(request: pytest.FixtureRequest) -> None:
    # Every `runtime` test needs torch_xla, whether or not it names the fixture.
    if request.node.get_closest_marker("runtime") is not None:
        request.getfixturevalue("xla")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    chosen = os.environ.get("TPULINT_TEST_LAYOUTS")
    keep = {name.strip() for name in chosen.split(",")} if chosen else None
    subset = not every_scenario_in_every_layout()
    selected, deselected = [], []
    for item in items:
        layout = getattr(getattr(item, "callspec", None), "params", {}).get("layout")
        dropped = layout is not None and (
            (keep is not None and layout not in keep)
            or (subset and layout != THREADS and item.get_closest_marker("threads_only"))
        )
        (deselected if dropped else selected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


@pytest.fixture(scope="module", params=LAYOUTS)
def layout(request: pytest.FixtureRequest) -> str:
    """The process layout a module's verdict scenarios run in (verify_helpers.LAYOUTS): every
    test that depends on it runs in each, with the same assertions."""
    return request.param


@pytest.fixture(scope="session")
def timed() -> Callable[..., Any]:
    """`timed(label, fn, *args, **kwargs)`: run fn, record its wall time for the summary."""

    def run(label: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _WALL_TIMES.append((label, time.perf_counter() - start))

    return run


@pytest.fixture(autouse=True)
def _repo_root_cwd(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Targets are given relative to the repository root, as in the README.
    monkeypatch.chdir(ROOT)
    yield


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _WALL_TIMES:
        return
    terminalreporter.section(f"tpulint verify wall times ({CORES} emulated cores)")
    for label, seconds in _WALL_TIMES:
        terminalreporter.write_line(f"{seconds:7.1f}s  {label}")
    total = sum(seconds for _, seconds in _WALL_TIMES)
    terminalreporter.write_line(f"{total:7.1f}s  total over {len(_WALL_TIMES)} runs")
