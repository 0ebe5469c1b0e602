"""What torch_xla knows per process, attributed to the rows of the process's cores.

torch_xla's counters and metrics (compiles, cached executions, transfers, host ops, compile
times) are per process, and so is its graph analysis file (graphs.py). A process holds one
core on TPU v4 and later, two on v2 and v3, and every emulated core when the cores are
threads. Nobody waits: each core writes its own row at the end of each step, and the last of
the process's cores to finish a given row reads what the process did since the previous read
and puts it in its row, so that every compile, transfer and graph is counted exactly once,
in the first row completed after it happened (what a barrier at every step used to give).
Child process only: imports torch_xla.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from tpulint.runtime.child.graphs import GraphLog, claims, debug_file
from tpulint.runtime.frames import is_tpulint_frame

# Counters that matter for the verdicts; every "aten::*" counter (an op torch_xla ran on the
# host, e.g. aten::nonzero for a boolean mask) is read too.
_COUNTERS = ("UncachedCompile", "CachedCompile")
_METRICS = ("TransferFromDeviceTime", "CompileTime")


def read_counters() -> dict[str, int]:
    """The process's counters now. Transfers the emulation itself made (bridge.py) are not
    the module's and are left out."""
    import torch_xla.debug.metrics as met
    from tpulint.runtime.child import bridge

    values = {name: int(met.counter_value(name) or 0) for name in _COUNTERS}
    for name in _METRICS:
        data = met.metric_data(name)
        values[name] = int(data[0]) if data else 0
    values["TransferFromDeviceTime"] -= bridge.transfers_made()
    for name in met.counter_names():
        if name.startswith("aten::"):
            values[name] = int(met.counter_value(name) or 0)
    return values


def _delta(now: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in now.items() if v != before.get(k, 0)}


def _compile_seconds(seen: int) -> tuple[list[list[float]], int]:
    """CompileTime samples posted since the `seen`-th: [[compile index, seconds], ...]. The
    metric keeps its last samples in a ring; each compile posts one, in order."""
    import torch_xla.debug.metrics as met

    data = met.metric_data("CompileTime")
    if not data:
        return [], seen
    total, _, samples = data
    first = int(total) - len(samples)
    found = [
        [first + i, round(value / 1e9, 4)]
        for i, (_, value) in enumerate(samples)
        if first + i >= seen
    ]
    return found, int(total)


class _ProcessState:
    def __init__(self, run_dir: str) -> None:
        self.graphs = GraphLog(debug_file(run_dir))
        self.previous: dict[str, int] | None = None
        self.compile_samples = 0
        self.arrivals: dict[Hashable, int] = {}
        self.local_cores = 1


class ProcessEvidence:
    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = str(run_dir)
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._state: _ProcessState | None = None
        os.register_at_fork(after_in_child=self._after_fork)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()
        self._pid, self._state = None, None

    def _current(self) -> _ProcessState:
        if self._pid != os.getpid() or self._state is None:
            self._pid, self._state = os.getpid(), _ProcessState(self.run_dir)
        return self._state

    def set_local_cores(self, count: int) -> None:
        """How many cores (replica threads) this process holds."""
        with self._lock:
            self._current().local_cores = max(1, count)

    def arrive(self, key: Hashable) -> dict[str, Any] | None:
        """A core of this process finished row `key`. The last one to do so gets what the
        process did since the previous read: {"counters", "graphs"}; the others get None."""
        with self._lock:
            state = self._current()
            count = state.arrivals.get(key, 0) + 1
            if count < state.local_cores:
                state.arrivals[key] = count
                return None
            state.arrivals.pop(key, None)
            return self._read(state)

    def _read(self, state: _ProcessState) -> dict[str, Any]:
        now = read_counters()
        counters = now if state.previous is None else _delta(now, state.previous)
        state.previous = now
        seconds, state.compile_samples = _compile_seconds(state.compile_samples)
        graphs = _sorted_entries(state.graphs.take())
        if seconds:
            graphs["compile_seconds"] = seconds
        return {"counters": counters, "graphs": graphs}


def empty_graphs() -> dict[str, Any]:
    return {"compiled": [], "executed": {}}


def _sorted_entries(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The graphs compiled (with where, numbered in the process's compile order) and executed
    (how often) in these entries, and the sizes XLA reported after each compile."""
    found = empty_graphs()
    sizes = []
    skip_hashes = set()
    for entry in entries:
        if entry["kind"] == "post":
            sizes.append([entry["index"], entry["memory"]])
            continue
        if claims(entry):  # graphs.claim_process's own graph
            skip_hashes.add(entry["hash"])
            continue
        if entry["hash"] in skip_hashes:
            continue
        if entry["kind"] == "execute":
            found["executed"][entry["hash"]] = found["executed"].get(entry["hash"], 0) + 1
            continue
        found["compiled"].append(
            {
                "hash": entry["hash"],
                "index": entry.get("index"),
                "cause": entry["cause"],
                # Innermost first, without tpulint's own wrappers; the judge finds the
                # user's line and the library function in them.
                "frames": [f for f in entry["frames"] if not is_tpulint_frame(f[0])][:32],
            }
        )
    if sizes:
        found["sizes"] = sizes
    return found
