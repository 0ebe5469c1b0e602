"""Which XLA graphs were compiled and executed, by torch_xla's own graph hash.

Counting compiles is not enough to judge compile stability: a graph compiled once after
warm-up and then reused (the first optimizer step under gradient accumulation, Lightning's
epoch-end bookkeeping) is harmless, a stream of new graphs is not, and on emulated cores
several replica threads can race to compile the same graph in an implicit sync. torch_xla
identifies every graph by a hash of its IR and prints it, with the Python frames that
triggered it, for every compilation and execution when PT_XLA_DEBUG_LEVEL >= 2
(torch_xla/csrc/debug_util.cpp, `analyze_graph_execution_python_frame`); PT_XLA_DEBUG_FILE
sends that to a file instead of stderr. Each entry is written in one append, and the process
leader reads the new ones at every step boundary, while the replica threads are parked.

Only the process whose PJRT_LOCAL_PROCESS_RANK is 0 writes them (on PJRT CPU that is the one
process holding every emulated core). Child process only; standard library only.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tpulint.runtime.child import hlo_dump

DEBUG_FILE = "xla-graphs.txt"
# Compiles need enough frames to reach the user's line from the sync that compiled (a host
# read in the user's step is a few frames up; a sync in Lightning's loops has no user line at
# any depth); executions print the same frames, so this also bounds the file's growth.
_MAX_FRAMES = 24

_PREFIXES = {
    "Compilation Analysis: ": "compile",
    "Execution Analysis: ": "execute",
}
_FRAME = re.compile(r"^\s+(?P<function>\S+) \((?P<path>.*):(?P<line>\d+)\)$")


def configure(run_dir: str) -> Path:
    """Turn the analysis on for this process and its children. Must run before torch_xla
    compiles its first graph: the level is read once, at the first analysis."""
    path = Path(run_dir) / DEBUG_FILE
    os.environ["PT_XLA_DEBUG_LEVEL"] = "2"
    os.environ["PT_XLA_DEBUG_FILE"] = str(path)
    os.environ["PT_XLA_DEBUG_MAX_FRAME"] = str(_MAX_FRAMES)
    os.environ.pop("PT_XLA_DEBUG", None)  # the Python-side function tracker: not wanted
    hlo_dump.configure(run_dir)  # the HLO of each compiled graph, for the judge's diff
    return path


@dataclass
class _Entry:
    kind: str
    cause: str = ""
    hash: str = ""
    frames: list[tuple[str, int, str]] = field(default_factory=list)


class GraphLog:
    """Reads the analysis file incrementally; `take()` returns the entries completed since the
    last call, each {"kind": "compile"|"execute", "hash", "cause", "frames"}."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0

    def take(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except OSError:
            return []
        # Only whole entries: one ends with its second rule of "=" signs.
        end = data.rfind(b"=\n")
        if end < 0:
            return []
        chunk = data[: end + 2]
        entries = parse(chunk.decode("utf-8", errors="replace"))
        self._offset += len(chunk)
        return entries


def parse(text: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    current: _Entry | None = None
    in_frames = False
    for line in text.splitlines():
        kind = None
        for prefix, name in _PREFIXES.items():
            if line.startswith(prefix):
                kind, line = name, line[len(prefix) :]
                break
        if kind is None:
            continue
        if line.startswith(("Compilation Cause", "Execution Cause")):
            current, in_frames = _Entry(kind), False
            continue
        if current is None or kind != current.kind:
            continue
        stripped = line.strip()
        if stripped.startswith("Graph Hash: "):
            current.hash = stripped[len("Graph Hash: ") :]
        elif stripped.startswith("Python Frame Triggered Execution"):
            in_frames = True
        elif stripped.startswith("---"):
            entries.append(
                {
                    "kind": current.kind,
                    "hash": current.hash,
                    "cause": current.cause,
                    "frames": current.frames,
                }
            )
            current, in_frames = None, False
        elif in_frames:
            match = _FRAME.match(line)
            if match:
                current.frames.append((match["path"], int(match["line"]), match["function"]))
        elif (
            not current.cause
            and stripped
            and not stripped.startswith(("Graph Info", "Graph Name", "Number of Graph"))
        ):
            current.cause = stripped
    return entries
