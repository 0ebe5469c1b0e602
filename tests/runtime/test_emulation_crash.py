"""A crash of the emulated runtime itself (PJRT CPU) is not a verdict on the module.

torch_xla's CPU client has been seen to die of SIGSEGV inside `xla_rendezvous` (Lightning's
setup barrier) with no line of the user's running: verify runs the module once more and says
so. A crash with a line of the user's on the crashing thread, or outside torch_xla, is judged
as before (and not run again).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from tpulint.runtime import api, verify
from tpulint.runtime.judge.crash import emulation_fault
from tpulint.runtime.judge.render import render
from tpulint.runtime.runner import RunOutcome
from verify_helpers import CORES, ROOT, target

SITE = "/venv/lib/python3.11/site-packages"


def _stacks(innermost: list[tuple[str, int, str]], ident: int = 0x7F00) -> str:
    """faulthandler's report of a segfault on thread `ident`, innermost frame first."""
    frames = "\n".join(
        f'  File "{path}", line {line} in {function}' for path, line, function in innermost
    )
    return (
        "Fatal Python error: Segmentation fault\n\n"
        f"Current thread 0x{ident:016x} (most recent call first):\n{frames}\n\n"
        "Thread 0x00007f0000000001 (most recent call first):\n"
        f'  File "{SITE}/torch_xla/core/xla_model.py", line 1346 in xla_rendezvous\n\n'
        "Extension modules: torch._C (total: 1)\n"
    )


def _crashed(run_dir: Path, innermost: list[tuple[str, int, str]], roots: list[str]) -> RunOutcome:
    pid = 4242
    (run_dir / f"stacks-1-{pid}.txt").write_text(_stacks(innermost), encoding="utf-8")
    events: list[dict[str, Any]] = [
        {"kind": "target", "roots": roots},
        {"kind": "replica_thread", "rank": 3, "ident": 0x7F00, "pid": pid},
    ]
    return RunOutcome("crashed", "the child process was killed by SIGSEGV", -11, events, "", 1.0)


RENDEZVOUS = [
    (f"{SITE}/torch_xla/core/xla_model.py", 1346, "xla_rendezvous"),
    (f"{SITE}/torch_xla/core/xla_model.py", 1386, "rendezvous"),
    (f"{SITE}/lightning/pytorch/strategies/xla.py", 211, "barrier"),
]


def test_a_segfault_in_torch_xla_with_no_user_frame_is_the_emulations(tmp_path: Path) -> None:
    outcome = _crashed(tmp_path, RENDEZVOUS, ["/project"])
    assert emulation_fault(outcome, tmp_path) == (
        "core 3 died of SIGSEGV at step 0 in `xla_rendezvous` (torch_xla/core/xla_model.py:1346)"
    )


def test_a_user_frame_on_the_crashing_thread_makes_it_the_modules(tmp_path: Path) -> None:
    frames = [*RENDEZVOUS[:1], ("/project/model.py", 40, "training_step"), *RENDEZVOUS[1:]]
    assert emulation_fault(_crashed(tmp_path, frames, ["/project"]), tmp_path) is None


def test_a_crash_outside_torch_xla_is_not_the_emulations(tmp_path: Path) -> None:
    frames = [("/usr/lib/python3.11/ctypes/__init__.py", 519, "string_at")]
    assert emulation_fault(_crashed(tmp_path, frames, ["/project"]), tmp_path) is None


def test_only_a_crashed_run_is_looked_at(tmp_path: Path) -> None:
    outcome = _crashed(tmp_path, RENDEZVOUS, ["/project"])
    outcome.status = "finished"
    assert emulation_fault(outcome, tmp_path) is None


def _first_run_crashes(
    monkeypatch: pytest.MonkeyPatch, innermost: list[tuple[str, int, str]]
) -> list[str]:
    """Make verify's first child run end as a crash with `innermost` on the crashing thread;
    later runs are real. Returns the run directories used, in order."""
    real = api.run_child
    used: list[str] = []

    def run_child(spec: Any, backend: Any, timeout: float) -> RunOutcome:
        used.append(spec.run_dir)
        if len(used) == 1:
            return _crashed(Path(spec.run_dir), innermost, [os.fspath(ROOT / "tests")])
        return real(spec, backend, timeout)

    monkeypatch.setattr(api, "run_child", run_child)
    return used


@pytest.mark.runtime
def test_verify_runs_the_module_again_after_the_emulation_crashed(
    xla: None, timed, monkeypatch: pytest.MonkeyPatch
) -> None:
    used = _first_run_crashes(monkeypatch, RENDEZVOUS)
    report = timed(
        "clean module after an emulation crash (API, threads)",
        verify,
        target("clean.py:CleanModel"),
        cores=CORES,
        cwd=ROOT,
    )
    assert report.error is None, report.error_detail
    assert report.verdict == "pass", report.summary
    assert len(used) == 2 and used[1] != used[0]  # a fresh run directory
    assert report.run["emulation_crash"].startswith("core 3 died of SIGSEGV at step 0")
    assert report.to_json()["run"]["emulation_crash"] == report.run["emulation_crash"]
    assert "note: the first run's emulated cores crashed inside torch_xla" in render(report)


def test_a_crash_of_the_users_code_is_not_run_again(monkeypatch: pytest.MonkeyPatch) -> None:
    frames = [("/usr/lib/python3.11/ctypes/__init__.py", 519, "string_at")]
    used = _first_run_crashes(monkeypatch, frames)
    # a fake backend: the first (crashed) run is all that happens, so torch_xla is not needed
    monkeypatch.setattr(api, "check_installation", lambda backend: None)
    report = verify(target("clean.py:CleanModel"), cores=CORES, cwd=ROOT)
    assert len(used) == 1
    assert report.verdict == "error" and "emulation_crash" not in report.run
    assert "died of SIGSEGV" in report.error
