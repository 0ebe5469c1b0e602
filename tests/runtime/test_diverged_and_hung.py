"""Runs that cannot finish are verdicts, not tool crashes: cores entering different
collectives is "replica graphs diverged" (XLA's rendezvous abort when the cores are threads,
the collective bridge's comparison when they are processes), a stuck core is "hung" (found
from every process's stacks); both name the user's line, and no process of the run survives
it."""

from __future__ import annotations

import pytest
from tpulint.runtime import verify
from tpulint.runtime.judge.report import VerifyReport
from verify_helpers import CORES, ROOT, THREADS, child_processes, emulate, target

pytestmark = pytest.mark.runtime


@pytest.fixture(scope="module")
def diverged(xla: None, timed, layout: str) -> VerifyReport:
    return timed(
        f"rank-conditional barrier: collectives differ (API, {layout})",
        verify,
        target("rank_barrier.py:RankBarrierModel"),
        cores=CORES,
        emulate=emulate(layout),
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def hung(xla: None, timed, layout: str) -> VerifyReport:
    # No core progresses for 15 s: the parent reads every process's stacks and ends the run
    # then, not at the --timeout.
    return timed(
        f"stuck core: stacks read after 15s without progress (API, {layout})",
        verify,
        target("stuck_core.py:StuckCoreModel"),
        cores=CORES,
        barrier_timeout=15,
        emulate=emulate(layout),
        cwd=ROOT,
    )


def test_different_collectives_are_a_diverged_verdict(diverged: VerifyReport, layout) -> None:
    assert diverged.error is None, diverged.error_detail
    assert diverged.verdict == "fail" and diverged.exit_code == 1
    assert diverged.run["status"] == "diverged"
    if layout == THREADS:
        assert "Termination timeout" in diverged.log  # XLA's own abort, seen by the parent
    else:
        assert "collectives did not match" in diverged.run["detail"]
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
    assert hung.run["seconds"] < 300  # ended from the stacks, long before the 600 s timeout


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
