"""Shared pytest configuration.

- A plain `pytest` run is fast: tests marked `slow` (fresh installs, pre-commit) or `runtime`
  (tpulint verify on real torch_xla) are skipped unless `--all` is given. The README's test
  command, which CI runs, passes `--all -n auto` (see pytest_xdist_make_scheduler below).
- Rule examples are collected as tests by tests/test_rule_examples.py.
- `--corpus PATH` (or TPULINT_CORPUS) enables the tests marked `corpus`, which need the public
  corpus fetched by ../shared/corpus/fetch.sh.
- `--fuzz N` runs the long fuzz tests (marked `fuzz`) with N programs per strategy; a short
  fuzz run is part of the default tests.
- Tests marked `runtime` need torch_xla; they skip with a reason when it is missing, unless
  TPULINT_REQUIRE_XLA=1 (as in CI), where a missing torch_xla is a failure.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--corpus",
        default=os.environ.get("TPULINT_CORPUS"),
        help="path of the fetched public corpus (the folder fetch.sh fills); enables corpus tests",
    )
    parser.addoption(
        "--all",
        action="store_true",
        default=bool(os.environ.get("TPULINT_ALL_TESTS")),
        help="also run the slow and runtime tests (CI does)",
    )
    parser.addoption(
        "--fuzz",
        type=int,
        default=0,
        metavar="N",
        help="run the long fuzz tests (marked `fuzz`) with N programs per strategy",
    )
    parser.addoption(
        "--update-snapshots",
        action="store_true",
        default=False,
        help="rewrite snapshot files instead of comparing against them",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    corpus = config.getoption("--corpus")
    skip_corpus = pytest.mark.skip(
        reason="needs the public corpus: pass --corpus PATH (see ../shared/corpus/fetch.sh)"
    )
    run_all = config.getoption("--all")
    skip_slow = pytest.mark.skip(reason="slow test: run with `pytest --all` (CI does)")
    fuzz = config.getoption("--fuzz")
    skip_fuzz = pytest.mark.skip(reason="long fuzz run: opt in with `--fuzz N`")
    for item in items:
        if item.get_closest_marker("fuzz") and not fuzz:
            item.add_marker(skip_fuzz)
        # Markers, not keywords: `item.keywords` also holds folder names (tests/runtime/).
        if item.get_closest_marker("corpus") and not corpus:
            item.add_marker(skip_corpus)
        if not run_all and (item.get_closest_marker("slow") or item.get_closest_marker("runtime")):
            item.add_marker(skip_slow)


# A runtime test whose id names an emulated TPU VM (`[v5e-8]`, `[v5e-4]`): its runs start one
# process per chip.
_EMULATED_PROCESSES = re.compile(r"\[(?:[^\]]*-)?v\d+[a-z]*-\d+(?:-[^\]]*)?\]")


def runtime_scope(nodeid: str) -> str:
    """The xdist scope of a test under `-n N` (pytest_xdist_make_scheduler).

    * Every runtime test whose runs emulate a TPU VM's processes (8 processes of a v5e-8, 4
      of a v5e-4) is in one scope, run one after another in one worker: two such runs at
      once put 16 CPU-bound processes on the machine, and one CI run with two of them
      side by side miscounted a per-step read (tests/runtime/test_causes.py).
    * Every other runtime test (cores as threads of one process, and the runs with no
      layout) is in its module's scope: the module's fixtures train once in the worker that
      takes it, beside the processes' scope in the other worker.
    * Every other test is a scope of its own.
    """
    if not nodeid.startswith("tests/runtime/"):
        return nodeid
    if _EMULATED_PROCESSES.search(nodeid):
        return "tests/runtime[emulated processes]"
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Under `-n N` (the README's command), schedule tests/runtime/ by runtime_scope().

    The runs of the process layouts go one after another in one worker; the runtime modules'
    threads-layout tests go in the other workers beside them, then the rest of the suite.
    Until 2026-11-27 every runtime test ran in one worker, and that worker was the whole
    run's critical path (tests 1,335 s of 1,480 s in CI, the other worker idle for most of
    it; bench/README.md, "CI time"). xdist's own `xdist_group` marks cannot do this: its
    workers tag node ids through a private pytest attribute that pytest 9.2 no longer reads,
    and the scheduler sees only node ids, so the scope is chosen from the node id.
    """
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class RuntimeScopes(LoadScopeScheduling):
        # Scopes are queued largest first (`--loadscope-reorder`, on by default): the
        # processes' scope and the runtime modules start at once.
        def _split_scope(self, nodeid: str) -> str:
            return runtime_scope(nodeid)

    return RuntimeScopes(config, log)


@pytest.fixture(scope="session")
def corpus_dir(pytestconfig: pytest.Config) -> Path:
    value = pytestconfig.getoption("--corpus")
    path = Path(value)
    if not (path / "pkgs").is_dir():
        pytest.fail(f"--corpus {value}: no pkgs/ folder there; run fetch.sh first")
    return path


@pytest.fixture
def update_snapshots(pytestconfig: pytest.Config) -> bool:
    return bool(pytestconfig.getoption("--update-snapshots"))
