"""Runtime tests: `tpulint verify` on real torch_xla with 8 emulated cores (PJRT CPU).

Tests marked `runtime` need torch, torch_xla and lightning. Without them they skip, with the
reason, unless TPULINT_REQUIRE_XLA=1 (CI sets it): then a missing or broken torch_xla is a
failure, so the suite can never pass in CI by skipping.

Each scenario trains once (a module-scoped fixture in its test module) and every assertion
about it reads that one report. The wall time of every verify run is printed at the end.

Every verdict scenario runs in every layout of verify_helpers.LAYOUTS (the cores as threads
of one process, and as a v5e-8's 8 processes of one device each), with the same assertions;
TPULINT_TEST_LAYOUTS=threads (a comma-separated list) runs only those, for a quicker local
run. Every scenario's process layout is v5e-8's, not a v4-8's 4 processes: 8 writers is the
most a TPU VM has for the bridge, the shared loader board and the per-process files, and the
scenarios' numbers are written for 8 cores (a 4-core layout would need every count
restated); what the 8 processes cost is paid by the quick compiles below.

The runs compile with XLA:CPU's backend optimizations off (`--xla_backend_optimization_level=0`
in XLA_FLAGS, unless XLA_FLAGS already sets a level): the graphs, their count, their HLO and
every recorded number are the same (the level only changes how LLVM optimizes the kernels XLA
emits), and compiling is most of an emulated run's time: each of the 8 processes compiles
every graph itself. Measured on the clean module: 16.6 s -> 10.5 s as processes, 9.0 s ->
7.1 s as threads. Verify itself leaves XLA_FLAGS as the user set them.
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


_QUICK_COMPILES = "--xla_backend_optimization_level=0"


def _session_environment() -> dict[str, str]:
    """What every verify child of this session inherits: the session's marker (for
    verify_helpers.child_processes) and quick XLA:CPU compiles (the module docstring says why)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "--xla_backend_optimization_level" not in flags:
        flags = f"{flags} {_QUICK_COMPILES}".strip()
    return {SESSION_VARIABLE: SESSION_MARKER, "XLA_FLAGS": flags}


@pytest.fixture(scope="session", autouse=True)
def _session_environment_for_verify_children() -> Iterator[None]:
    chosen = _session_environment()
    previous = {name: os.environ.get(name) for name in chosen}
    os.environ.update(chosen)
    yield
    for name, value in previous.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def _runtime_marker_needs_xla(request: pytest.FixtureRequest) -> None:
    # Every `runtime` test needs torch_xla, whether or not it names the fixture.
    if request.node.get_closest_marker("runtime") is not None:
        request.getfixturevalue("xla")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    chosen = os.environ.get("TPULINT_TEST_LAYOUTS")
    keep = {name.strip() for name in chosen.split(",")} if chosen else None
    selected, deselected = [], []
    for item in items:
        layout = getattr(getattr(item, "callspec", None), "params", {}).get("layout")
        dropped = layout is not None and keep is not None and layout not in keep
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
