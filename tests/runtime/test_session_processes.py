"""The leftover-process check (verify_helpers.child_processes) sees only the verify processes
this test session started: other verify runs share the machine and must not fail it."""

from __future__ import annotations

import os
import subprocess
import sys

from verify_helpers import SESSION_MARKER, SESSION_VARIABLE, child_processes

# A process whose command line looks like a verify child's, without running one.
LOOKALIKE = [sys.executable, "-c", "import time; time.sleep(60)", "tpulint.runtime.child"]


def _start(marker: str | None) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != SESSION_VARIABLE}
    if marker is not None:
        env[SESSION_VARIABLE] = marker
    return subprocess.Popen(LOOKALIKE, env=env)


def test_only_this_sessions_processes_are_seen() -> None:
    assert os.environ[SESSION_VARIABLE] == SESSION_MARKER  # set by conftest for every run
    ours, other_session, unmarked = _start(SESSION_MARKER), _start("another-session"), _start(None)
    try:
        found = child_processes()
        assert ours.pid in found
        assert other_session.pid not in found and unmarked.pid not in found
        assert other_session.pid in child_processes("another-session")
    finally:
        for process in (ours, other_session, unmarked):
            process.kill()
            process.wait()
    assert ours.pid not in child_processes()
