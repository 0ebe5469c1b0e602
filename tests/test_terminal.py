"""Terminal manners: a progress bar and colour on a TTY for long runs, plain output otherwise."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from tests.helpers import LEGACY_TRAINER, make_project, run_subprocess


def _run_in_pty(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run `python -m tpulint ARGS` with stdout and stderr on a pseudo-terminal."""
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tpulint", *args],
        cwd=cwd,
        stdout=follower,
        stderr=follower,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the other end is closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.wait(timeout=300), b"".join(chunks).decode(errors="replace")


def test_progress_bar_and_colour_on_a_tty(tmp_path: Path) -> None:
    files = {f"pkg/m{i:03}.py": LEGACY_TRAINER for i in range(240)}
    root = make_project(tmp_path / "p", files)
    status, output = _run_in_pty(["check", ".", "--no-cache", "--statistics"], root)
    assert status == 1
    assert "Checking" in output  # click's progress bar label
    assert "\x1b[" in output  # colour
    assert "240\tTPU001" in output


def test_quiet_and_plain_without_a_tty(tmp_path: Path) -> None:
    files = {f"pkg/m{i:03}.py": LEGACY_TRAINER for i in range(240)}
    root = make_project(tmp_path / "p", files)
    result = run_subprocess(
        ["check", ".", "--no-cache", "--statistics"], root, env={"NO_COLOR": ""}
    )
    assert result.exit_code == 1
    assert result.stderr == ""
    assert "\x1b[" not in result.stdout
    assert "Checking" not in result.stdout


def test_small_runs_have_no_progress_bar(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"train.py": LEGACY_TRAINER})
    status, output = _run_in_pty(["check", "."], root)
    assert status == 1
    assert "Checking" not in output
