"""The cores and the time a run gets: `--cores 1` works in every layout (Lightning's
SingleDeviceXLAStrategy, no processes spawned), `--cores` is checked against the layout before
anything starts, and a run that keeps stepping but runs out of time is too slow to judge
(exit 2, with its time per step), not hung, and what it recorded is still judged."""

from __future__ import annotations

import pytest
from tpulint.runtime import verify
from tpulint.runtime.judge.render import render
from tpulint.runtime.judge.report import VerifyReport
from verify_helpers import ROOT, child_processes, emulate, target

pytestmark = pytest.mark.runtime


@pytest.fixture(scope="module")
def one_core(xla: None, timed, layout: str) -> VerifyReport:
    return timed(
        f"--cores 1 (API, {layout})",
        verify,
        target("clean.py:CleanModel"),
        cores=1,
        emulate=emulate(layout),
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def slow(xla: None, timed) -> VerifyReport:
    # 3 epochs of 16 steps of 2 s: 96 s of training against 45 s after the first step (the
    # first 45 s are for starting and compiling, generous on a loaded machine)
    return timed(
        "2 s per step, --timeout 45 (API)",
        verify,
        target("slow.py:SlowModel"),
        cores=2,
        timeout=45,
        cwd=ROOT,
    )


def test_one_core_trains_without_a_launcher(one_core: VerifyReport) -> None:
    assert one_core.error is None, one_core.error_detail
    assert one_core.verdict == "pass", one_core.summary
    assert one_core.backend["cores"] == 1
    assert one_core.backend["strategy"] == "SingleDeviceXLAStrategy"
    assert one_core.checks["sharding"].status == "skipped"  # one core: nothing to shard
    assert one_core.checks["compile_stability"].status == "pass"
    # 512 samples, batch 16: 32 steps per epoch, --steps 32
    assert len(one_core.steps) == 96


def test_cores_are_checked_before_anything_starts() -> None:
    report = verify(target("clean.py:CleanModel"), cores=8, emulate="v4-8", cwd=ROOT)
    assert report.verdict == "error" and report.exit_code == 2
    assert report.error == (
        "--cores 8: the emulated v4-8 has 4 TPU cores (4 processes x 1 device); Lightning"
        " trains on 1 core or on all of them, so --cores accepts 1 or 4"
    )
    assert report.wall_seconds < 30  # no training process was started


def test_too_slow_is_not_hung(slow: VerifyReport) -> None:
    assert slow.run["status"] == "too_slow", slow.run
    assert slow.verdict == "error" and slow.exit_code == 2
    assert slow.error.startswith("too slow to judge here: 2.")
    assert slow.error.endswith(" s per step; raise --timeout or use a smaller configuration")
    # what was recorded is judged: epoch 0's shards, the graphs so far
    assert slow.steps, slow.run
    assert slow.checks["sharding"].status in ("pass", "skipped")
    assert slow.shards and slow.shards[0].status == "pass"
    assert "hung" not in slow.summary
    text = render(slow)
    assert "Checks" in text and "too slow to judge here" in text
    # the run the parent ended left none of its processes behind
    assert child_processes() == []


def test_no_process_survives(one_core: VerifyReport) -> None:
    """After the one-core run of each layout (the timed-out run: test_too_slow_is_not_hung).
    Apart, so that the layout-free timed-out run trains once, in the worker that runs the
    module's tests without a layout, not again beside each layout's run."""
    assert child_processes() == []
