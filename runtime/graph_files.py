"""torch_xla's graph analysis files (PT_XLA_DEBUG_LEVEL, PT_XLA_DEBUG_FILE), read: each
compilation and execution with its graph hash and the Python frames that triggered it, and
the sizes XLA reports after each compilation. The training processes read their own file at
every row (child/evidence.py); the verify parent reads them to tell a compilation in
progress from a hang. Standard library only. (child/graphs.py turns the analysis on.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_PREFIXES = {
    "Compilation Analysis: ": "compile",
    "Execution Analysis: ": "execute",
    "Post Compilation Analysis: ": "post",
}
# The sizes XLA reports after compiling a graph (post_compilation_analysis), in GB.
_SIZES = {
    "Graph input size": "input_gb",
    "Graph output size": "output_gb",
    "Aliased Input size": "aliased_gb",
    "Intermediate tensor size": "temp_gb",
    "Compiled program size": "program_gb",
}
_FRAME = re.compile(r"^\s+(?P<function>\S+) \((?P<path>.*):(?P<line>\d+)\)$")


@dataclass
class _Entry:
    kind: str
    cause: str = ""
    hash: str = ""
    frames: list[tuple[str, int, str]] = field(default_factory=list)


class GraphLog:
    """Reads a process's analysis file incrementally; `take()` returns the entries completed
    since the last call, each {"kind": "compile"|"execute", "hash", "cause", "frames"} or
    {"kind": "post", "memory"}. Compilations and their sizes are numbered in file order
    (`index`): the sizes numbered i belong to the compilation numbered i (a process compiles
    one graph at a time)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._compiles = 0
        self._posts = 0

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
        for entry in entries:
            if entry["kind"] == "compile":
                entry["index"], self._compiles = self._compiles, self._compiles + 1
            elif entry["kind"] == "post":
                entry["index"], self._posts = self._posts, self._posts + 1
        return entries


def compiling_now(path: Path) -> bool:
    """Whether the last compilation in this analysis file has not finished (its entry is
    written, its sizes are not): the process is compiling now."""
    return unfinished_compile(path) is not None


def unfinished_compile(path: Path) -> dict[str, Any] | None:
    """The entry of the compilation in progress in this file's process, or None."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    compiles = text.count("Compilation Analysis: Compilation Cause")
    finished = text.count("Post Compilation Analysis: Graph input size")
    if compiles <= finished:
        return None
    entries = [e for e in parse(text) if e["kind"] == "compile"]
    return entries[-1] if entries else {"kind": "compile", "hash": "", "cause": "", "frames": []}


def parse(text: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    current: _Entry | None = None
    post: dict[str, float | None] | None = None
    in_frames = False
    for line in text.splitlines():
        kind = None
        for prefix, name in _PREFIXES.items():
            if line.startswith(prefix):
                kind, line = name, line[len(prefix) :]
                break
        if kind is None:
            continue
        if kind == "post":
            label, _, value = line.strip().partition(": ")
            if label in _SIZES:
                if post is None:
                    post = {}
                try:
                    post[_SIZES[label]] = float(value.split()[0])
                except (ValueError, IndexError):
                    post[_SIZES[label]] = None
            elif line.strip().startswith("---") and post is not None:
                entries.append({"kind": "post", "memory": post})
                post = None
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
