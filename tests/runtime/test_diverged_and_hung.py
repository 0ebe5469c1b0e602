"""Runs that cannot finish are verdicts, not tool crashes: an XLA rendezvous abort is
"replica graphs diverged", a stuck core is "hung"; both name the user's line, and no process
of the run survives it."""

from __future__ import annotations

import pytest
from tpulint.runtime import verify
from tpulint.runtime.judge.report import VerifyReport
from verify_helpers import CORES, ROOT, child_processes, target

pytestmark = pytest.mark.runtime


@pytest.fixture(scope="module")
def diverged(xla: None, timed) -> VerifyReport:
    return timed(
        "rank-conditional barrier: XLA abort (API)",
        verify,
        target("rank_barrier.py:RankBarrierModel"),
        cores=CORES,
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def hung(xla: None, timed) -> VerifyReport:
    # A core gives up after 15 s at a barrier; the run ends then, not at the --timeout.
    return timed(
        "stuck core: barrier gives up after 15s (API)",
        verify,
        target("stuck_core.py:StuckCoreModel"),
        cores=CORES,
        barrier_timeout=15,
        cwd=ROOT,
    )


def test_rendezvous_abort_is_a_diverged_verdict(diverged: VerifyReport) -> None:
    assert diverged.error is None, diverged.error_detail
    assert diverged.verdict == "fail" and diverged.exit_code == 1
    assert diverged.run["status"] == "diverged"
    assert "Termination timeout" in diverged.log  # XLA's own abort, seen by the parent
    assert diverged.checks["compile_stability"].status == "fail"
    cause = next(c for c in diverged.causes if c.kind == "diverged_replicas")
    assert str(cause.location) == "tests/runtime/targets/rank_barrier.py:18"
    assert cause.location.function == "training_step"
    # core 0 entered the barrier's all_gather, the others the gradient all_reduce
    # and each group's line: the barrier in the user's step, Lightning's gradient all-reduce
    assert "`all_gather` on cores 0 at tests/runtime/targets/rank_barrier.py:18;" in cause.message
    assert "`all_reduce` on cores 1, 2, 3, 4, 5, 6, 7 at lightning/" in cause.message
    assert cause.steps == [1]


def test_stuck_core_is_a_hung_verdict(hung: VerifyReport) -> None:
    assert hung.error is None, hung.error_detail
    assert hung.verdict == "fail" and hung.exit_code == 1
    assert hung.run["status"] == "hung"
    cause = next(c for c in hung.causes if c.kind == "hung")
    assert str(cause.location) == "tests/runtime/targets/stuck_core.py:22"  # NEVER.wait()
    assert cause.location.function == "training_step"
    assert "core 0 never finished it (blocked at this line in training_step())" in cause.message
    assert "cores 1, 2, 3, 4, 5, 6, 7 waited at" in cause.message
    assert cause.cores == [0] and cause.steps == [1]
    assert hung.summary.startswith("fail: hung: ")
    assert hung.run["seconds"] < 300  # ended by the barrier, long before the 600 s watchdog


def test_watchdog_before_training_is_an_error(xla: None, timed) -> None:
    report = timed(
        "watchdog during startup (API)",
        verify,
        target("clean.py:CleanModel"),
        cores=CORES,
        timeout=1,
        cwd=ROOT,
    )
    assert report.verdict == "error"
    assert report.error.startswith("timed out after 1s before training started")


def test_no_process_of_a_run_survives(diverged: VerifyReport, hung: VerifyReport) -> None:
    assert child_processes() == []
