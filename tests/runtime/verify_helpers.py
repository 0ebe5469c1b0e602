"""Constants and helpers shared by the runtime tests (conftest.py holds the fixtures)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGETS = Path(__file__).resolve().parent / "targets"
CORES = 8
# `tpulint verify` in a fresh interpreter, through the real entry point (tpulint/cli.py).
VERIFY = [sys.executable, "-m", "tpulint", "verify"]


def target(name: str) -> str:
    """A target under tests/runtime/targets, as typed from the repository root."""
    return f"tests/runtime/targets/{name}"


def child_processes() -> list[int]:
    """Processes still running a verify child (there must be none after a run)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if b"tpulint.runtime.child" in cmdline:
            found.append(int(entry))
    return found
