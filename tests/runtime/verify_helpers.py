"""Constants and helpers shared by the runtime tests (conftest.py holds the fixtures)."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGETS = Path(__file__).resolve().parent / "targets"
CORES = 8
# `tpulint verify` in a fresh interpreter, through the real entry point (tpulint/cli.py).
VERIFY = [sys.executable, "-m", "tpulint", "verify"]


def target(name: str) -> str:
    """A target under tests/runtime/targets, as typed from the repository root."""
    return f"tests/runtime/targets/{name}"


# Every verify run this test session starts inherits this marker in its environment
# (conftest.py sets it), so a test that looks for leftover processes sees only its own runs':
# other verify runs, other test sessions, share the machine.
SESSION_VARIABLE = "TPULINT_TEST_SESSION"
SESSION_MARKER = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"


def child_processes(marker: str = SESSION_MARKER) -> list[int]:
    """Verify child processes (and the replica processes they forked) started by this test
    session that are still running; there must be none after a run."""
    needle = f"{SESSION_VARIABLE}={marker}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
            if b"tpulint.runtime.child" not in cmdline:
                continue
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environment = handle.read().split(b"\0")
        except OSError:  # gone, or another user's
            continue
        if needle in environment:
            found.append(int(entry))
    return found
