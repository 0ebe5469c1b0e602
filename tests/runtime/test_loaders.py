"""The loaders of real projects run as on a TPU VM: worker processes that persist across
epochs, code that runs for a core (the dataset's __iter__, worker_init_fn, worker processes)
sees that core's rank, world size and device, and a core that runs out of data is the hang it
would be on a pod, named as such."""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest
from tpulint.runtime import verify
from tpulint.runtime.judge.report import VerifyReport
from verify_helpers import CORES, ROOT, child_processes, emulate, target

pytestmark = pytest.mark.runtime


@pytest.fixture(scope="module")
def workers(xla: None, timed, layout: str) -> tuple[VerifyReport, list[list[str]]]:
    # The child inherits this environment; the target writes what each core's code saw.
    with tempfile.TemporaryDirectory() as directory:
        seen = Path(directory) / "seen.txt"
        os.environ["TPULINT_TEST_SEEN"] = str(seen)
        try:
            report = timed(
                f"persistent loader workers, rank-split IterableDataset (API, {layout})",
                verify,
                target("loader_workers.py:WorkersModel"),
                cores=CORES,
                emulate=emulate(layout),
                cwd=ROOT,
            )
        finally:
            del os.environ["TPULINT_TEST_SEEN"]
        lines = [line.split() for line in seen.read_text().splitlines()] if seen.exists() else []
    return report, lines


@pytest.fixture(scope="module")
def uneven(xla: None, timed, layout: str) -> VerifyReport:
    return timed(
        f"rank split leaving cores without data (API, {layout})",
        verify,
        target("uneven_stream.py:UnevenStreamModel"),
        cores=CORES,
        emulate=emulate(layout),
        cwd=ROOT,
    )


def test_persistent_workers_pass(workers: tuple[VerifyReport, list[list[str]]]) -> None:
    report, _ = workers
    assert report.error is None, report.error_detail
    assert report.verdict == "pass", report.summary
    assert report.run["status"] == "finished"
    # 2048 samples / 8 cores / batch 32 = 8 steps per epoch; every epoch after the first
    # reuses the same worker processes
    assert report.run["epochs"] == 3
    assert [r.epoch for r in report.steps] == [e for e in range(3) for _ in range(8)]


def test_code_for_a_core_sees_that_core(workers: tuple[VerifyReport, list[list[str]]]) -> None:
    report, lines = workers
    per_process = report.backend["layout"]["devices_per_process"]
    iters: dict[tuple[str, str], list[str]] = defaultdict(list)
    inits: dict[tuple[str, str], list[str]] = defaultdict(list)
    for where, rank, world, device, worker, pid in lines:
        assert world == str(CORES)
        # torch_xla.device() is the core's own: xla:RANK when the cores are threads of one
        # process, the process's own device (xla:0) when each core is a process
        assert device == f"xla:{int(rank) % per_process}"
        (iters if where == "__iter__" else inits)[(rank, worker)].append(pid)
    expected = {(str(rank), str(worker)) for rank in range(CORES) for worker in (0, 1)}
    assert set(iters) == expected  # every core's two workers, each with its own rank
    assert set(inits) == expected
    for key, pids in iters.items():
        # one __iter__ per epoch, all in the worker process started once: persistent
        assert len(pids) == 3 and len(set(pids)) == 1, key
        assert inits[key] == pids[:1]


def test_a_core_out_of_data_is_a_hang(uneven: VerifyReport) -> None:
    assert uneven.error is None, uneven.error_detail
    assert uneven.verdict == "fail" and uneven.exit_code == 1
    assert uneven.run["status"] == "hung"
    cause = uneven.causes[0]
    assert (cause.check, cause.kind) == ("run", "out_of_data")
    assert cause.message.startswith("a core ran out of data: in epoch 0, core")
    assert "had no batch after 4 while" in cause.message
    assert "got batch 5" in cause.message
    assert str(cause.location) == "tests/runtime/targets/uneven_stream.py:39"
    assert uneven.summary.startswith("fail: hung: a core ran out of data")
    # caught at the fetch, long before any barrier or watchdog timeout
    assert uneven.run["seconds"] < 60
    assert "pass" not in {check.status for check in uneven.checks.values()}


def test_no_process_survives(uneven: VerifyReport, workers: tuple[VerifyReport, list]) -> None:
    assert child_processes() == []
