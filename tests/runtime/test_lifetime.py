"""No process of a run outlives its parent, and cleaning up does not depend on which thread
forked a process (child/lifetime.py). Plain torch, no XLA: MpDeviceLoader's pattern of
iterating each epoch's DataLoader in a new thread is reproduced with threading alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tpulint.runtime.environment import PARENT_FD_VARIABLE

pytestmark = pytest.mark.runtime

EPOCHS_IN_THREADS = """
import ctypes, os, signal, sys, threading
from torch.utils.data import DataLoader

if sys.argv[1] == "pdeathsig":  # what the child used to do in every forked process
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    os.register_at_fork(after_in_child=lambda: prctl(1, signal.SIGKILL))
else:
    from tpulint.runtime.child.lifetime import parent_fd_from_environment, watch_parent
    watch_parent(parent_fd_from_environment())

loader = DataLoader(list(range(64)), batch_size=8, num_workers=2, persistent_workers=True)
results = []

def epoch():  # MpDeviceLoader iterates every epoch in a new thread
    try:
        results.append(sum(len(batch) for batch in loader))
    except Exception as exc:
        results.append(type(exc).__name__ + ": " + str(exc))

for _ in range(2):
    thread = threading.Thread(target=epoch)
    thread.start()
    thread.join(timeout=60)
print(results, flush=True)
"""


def _run(mode: str, tmp_path: Path) -> str:
    read_end, write_end = os.pipe()
    out = tmp_path / f"{mode}.out"
    with open(out, "w") as handle:
        process = subprocess.Popen(
            [sys.executable, "-c", EPOCHS_IN_THREADS, mode],
            env={**os.environ, PARENT_FD_VARIABLE: str(read_end)},
            pass_fds=(read_end,),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    os.close(read_end)
    try:
        assert process.wait(timeout=180) == 0, out.read_text()
    finally:
        os.close(write_end)  # the watcher (if any) ends the group, as when a run ends
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return out.read_text().strip().splitlines()[-1]


def test_kill_on_parent_death_signal_killed_persistent_workers(tmp_path: Path) -> None:
    # The bug, reproduced: PR_SET_PDEATHSIG fires when the forking *thread* ends.
    out = _run("pdeathsig", tmp_path)
    assert out.startswith("[64, 'RuntimeError: DataLoader worker (pid(s)"), out
    assert "exited unexpectedly" in out


def test_persistent_workers_survive_the_thread_that_forked_them(tmp_path: Path) -> None:
    assert _run("watcher", tmp_path) == "[64, 64]"


GROUP = """
import os, sys, time
from tpulint.runtime.child.lifetime import parent_fd_from_environment, watch_parent
watch_parent(parent_fd_from_environment())
for _ in range(2):  # a replica process, a DataLoader worker...
    if os.fork() == 0:
        time.sleep(600)
        os._exit(0)
print("ready", flush=True)
time.sleep(600)
"""


def _group_alive(pgid: int) -> list[int]:
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(entry))
    return alive


def test_the_group_dies_with_the_parent() -> None:
    read_end, write_end = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-c", GROUP],
        env={**os.environ, PARENT_FD_VARIABLE: str(read_end)},
        pass_fds=(read_end,),
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    os.close(read_end)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        assert len(_group_alive(process.pid)) == 4  # the process, its watcher, 2 forks
        # What the kernel does when the parent dies, however it dies: its end closes.
        os.close(write_end)
        write_end = -1
        deadline = time.monotonic() + 20
        while _group_alive(process.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _group_alive(process.pid) == []
        assert process.wait(timeout=5) == -signal.SIGKILL
    finally:
        if write_end >= 0:
            os.close(write_end)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
