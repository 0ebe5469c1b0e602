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


# Every verdict test runs its scenario in two layouts and must reach the same verdict: the
# cores as threads of one process (verify's default emulation), and a TPU VM's layout of one
# process per core (`--emulate v5e-8`: 8 processes x 1 device, as on v5e-8 and v6e-8; the
# processes' collectives go through verify's host bridge, child/bridge.py). Same core count,
# so the scenarios and their numbers are the same in both. v5e-8 rather than a v4-8's 4
# processes: the most processes a TPU VM runs (the bridge, the shared board, the per-process
# files and graph dumps see 8 writers), and the scenarios' numbers are written for 8 cores.
THREADS = "threads"
PROCESSES = "v5e-8"
LAYOUTS = (THREADS, PROCESSES)


def emulate(layout: str) -> str | None:
    """The `emulate=` argument of verify() for a layout."""
    return None if layout == THREADS else layout


def emulate_args(layout: str) -> list[str]:
    """The command line's option for a layout."""
    return [] if layout == THREADS else ["--emulate", layout]


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
