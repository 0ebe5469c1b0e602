"""Code that raises under XLA raises on a TPU too: a failure (exit 1) naming the user's line
and the cause, never "could not run", and no check of such a run reads "pass"."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from tpulint.runtime import verify
from tpulint.runtime.judge.report import VerifyReport
from verify_helpers import ROOT, VERIFY, emulate, emulate_args, target

pytestmark = pytest.mark.runtime

RAISING = {
    "user": target("raises_in_step.py:RaisesModel"),
    "returns-none": target("raising.py:SkipsStep"),
    "no-xla-op": target("raising.py:SparseStep"),
    "sampler-refused": target("raising.py:CustomLoader"),
    "dataset": target("corrupt_record.py:CorruptRecord"),
}


def _all_at_once(layout: str) -> dict[str, Any]:
    # Each run ends at its first steps, so they run side by side.
    with ThreadPoolExecutor(max_workers=len(RAISING) + 1) as pool:
        futures = {
            name: pool.submit(verify, spec, cwd=ROOT, emulate=emulate(layout))
            for name, spec in RAISING.items()
        }
        futures["subprocess"] = pool.submit(
            subprocess.run,
            [*VERIFY, RAISING["user"], "-q", *emulate_args(layout)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
        )
        return {name: future.result() for name, future in futures.items()}


@pytest.fixture(scope="module")
def reports(xla: None, timed, layout: str) -> dict[str, Any]:
    return timed(
        f"{len(RAISING)} raising modules and 1 subprocess, concurrently ({layout})",
        _all_at_once,
        layout,
    )


def _failed(report: VerifyReport) -> Any:
    assert report.error is None, report.error_detail
    assert report.verdict == "fail" and report.exit_code == 1, report.summary
    assert report.run["status"] == "raised"
    assert "pass" not in {check.status for check in report.checks.values()}
    cause = report.causes[0]
    assert (cause.check, cause.kind, cause.severity) == ("run", "exception", "fail")
    return cause


def test_the_users_exception(reports: dict[str, Any]) -> None:
    report = reports["user"]
    cause = _failed(report)
    assert cause.message == "training raised ValueError: bad batch 1 on core 3"
    assert str(cause.location) == "tests/runtime/targets/raises_in_step.py:18"
    assert report.summary == (
        "fail: training raised ValueError: bad batch 1 on core 3"
        " (tests/runtime/targets/raises_in_step.py:18)"
    )
    assert 'raises_in_step.py", line 18, in training_step' in report.error_detail
    # the other cores were released at once: no wait for a barrier or the watchdog
    assert report.run["seconds"] < 150


def test_a_dataset_raising_in_the_loader_thread_is_the_exception(
    reports: dict[str, Any],
) -> None:
    # MpDeviceLoader reads the DataLoader on a thread of its own; torch_xla only prints what
    # raises there and ends that core's epoch. The verdict is the exception at its line, not
    # "core 2 ran out of data" with advice about sharding.
    report = reports["dataset"]
    cause = _failed(report)
    assert cause.message.startswith("training raised ValueError: corrupt record "), cause.message
    assert cause.message.endswith(" on core 2")
    assert str(cause.location) == "tests/runtime/targets/corrupt_record.py:26"
    assert "out of data" not in report.summary
    assert not [c for c in report.causes if c.kind == "out_of_data"]


def test_lightning_refusing_a_none_step_names_the_hook(reports: dict[str, Any]) -> None:
    cause = _failed(reports["returns-none"])
    assert cause.message.startswith(
        "training raised RuntimeError: Skipping the `training_step` by returning None in"
        " distributed training is not supported."
    )
    # the hook, and the library line that raised
    assert cause.message.endswith(
        "(Lightning raised it about this hook); raised in `_training_step`"
        " (lightning/pytorch/loops/optimization/automatic.py:323) of Lightning"
    )
    assert str(cause.location) == "tests/runtime/targets/raising.py:36"  # def training_step
    assert cause.location.function == "training_step"


def test_an_op_xla_cannot_run(reports: dict[str, Any]) -> None:
    cause = _failed(reports["no-xla-op"])
    assert cause.message.startswith(
        "training raised NotImplementedError: Could not run"
        " 'aten::_sparse_coo_tensor_with_dims_and_tensors' with arguments from the 'SparseXLA'"
        " backend."
    )
    assert len(cause.message) < 300  # torch's message lists every backend: cut short
    assert str(cause.location) == "tests/runtime/targets/raising.py:46"


def test_lightning_refusing_to_inject_a_sampler(reports: dict[str, Any]) -> None:
    cause = _failed(reports["sampler-refused"])
    assert "Trying to inject custom `Sampler` into the `TaggedLoader` instance" in cause.message
    assert (
        "(Lightning raised it about the DataLoader built at this line); raised in"
        " `_get_dataloader_init_args_and_kwargs` (lightning/pytorch/utilities/data.py:"
    ) in cause.message
    assert str(cause.location) == "tests/runtime/targets/raising.py:59"


def test_exit_status_and_output_in_a_real_subprocess(reports: dict[str, Any]) -> None:
    run = reports["subprocess"]
    assert run.returncode == 1, run.stderr
    assert run.stdout == (
        "verdict: FAIL (exit 1): fail: training raised ValueError: bad batch 1 on core 3"
        " (tests/runtime/targets/raises_in_step.py:18)\n"
    )
