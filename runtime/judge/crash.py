"""A replica process that died of a signal: which core, at which step, in which line.

The child enables faulthandler before Lightning forks the replica process (child/main.py), so
a replica killed by SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT writes "Fatal Python error"
and every thread's stack to the log before it dies. The crashing thread is the "Current
thread"; the child logged which thread is which core (`replica_thread` events). The main
process then sees only a broken process pool (BrokenProcessPool).

A crash whose thread has a line of the user's on its stack is the user's code's doing (a
native extension, an op given bad input): on a TPU the job dies the same way, so it is a
verdict. A crash with no user frame is reported as a crash of the run (exit 2) with where it
happened. Parent process only; standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tpulint.runtime.frames import CodeFilter

_FATAL = re.compile(r"^Fatal Python error: (?P<what>.+?)\s*$")
_THREAD = re.compile(r"^(?P<current>Current thread|Thread) (?P<ident>0x[0-9a-f]+)")
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<function>\S+)')

_SIGNALS = {
    "Segmentation fault": "SIGSEGV",
    "Aborted": "SIGABRT",
    "Bus error": "SIGBUS",
    "Floating-point exception": "SIGFPE",
    "Illegal instruction": "SIGILL",
}


@dataclass
class Crash:
    what: str  # "Segmentation fault"
    signal: str | None  # SIGSEGV
    rank: int | None  # the core whose replica thread crashed
    frames: list[tuple[str, int, str]] = field(default_factory=list)  # innermost first
    user: dict[str, Any] | None = None  # the innermost user frame
    library: dict[str, Any] | None = None  # the innermost frame, when it is not the user's


def find_crash(log: str, events: list[dict[str, Any]], code: CodeFilter | None) -> Crash | None:
    """The first fatal error faulthandler reported in the log, with its crashing thread."""
    lines = log.splitlines()
    start = next((i for i, line in enumerate(lines) if _FATAL.match(line)), None)
    if start is None:
        return None
    what = _FATAL.match(lines[start])["what"]  # type: ignore[index]
    frames: list[tuple[str, int, str]] = []
    ident: int | None = None
    in_current = False
    for line in lines[start + 1 :]:
        header = _THREAD.match(line)
        if header:
            if in_current:
                break
            in_current = header["current"] == "Current thread"
            ident = int(header["ident"], 16) if in_current else ident
            continue
        match = _FRAME.match(line) if in_current else None
        if match:
            frames.append((match["path"], int(match["line"]), match["function"]))
        elif in_current and not line.strip() and frames:
            break
    ranks = {e["ident"]: e["rank"] for e in events if e["kind"] == "replica_thread"}
    crash = Crash(what, _SIGNALS.get(what), ranks.get(ident) if ident is not None else None, frames)
    for path, line, function in frames:
        site = {"path": path, "line": line, "function": function, "user": False}
        if code is not None and code.is_user(path):
            crash.user = {**site, "user": True}
            break
        if crash.library is None:
            crash.library = site
    return crash


def _where(rows: list[Any], crash: Crash) -> str:
    step = rows[-1].step + 1 if rows else 0
    core = f"core {crash.rank}" if crash.rank is not None else "a replica"
    return f"{core} died of {crash.signal or crash.what} at step {step}"


def crash_place(crash: Crash | None, outcome: Any) -> str:
    """For a crash that is not the user's: where it happened, as far as the log says."""
    if crash is None:
        return " (no replica reported a fatal error; -v shows the log)"
    rows = [e for e in outcome.events if e["kind"] == "step"]
    step = max((e["step"] for e in rows), default=-1) + 1
    core = f"core {crash.rank}" if crash.rank is not None else "a replica"
    inside = ""
    if crash.library is not None:
        inside = (
            f" in `{crash.library['function']}` ({_shown(crash.library['path'])}:"
            f"{crash.library['line']})"
        )
    return (
        f" ({core} died of {crash.signal or crash.what} at step {step}{inside}, with no line of"
        " yours on its stack; -v shows every thread's stack)"
    )


def crash_cause(ctx: Any, crash: Crash, rows: list[Any], outcome: Any) -> Any:
    """The crash of a replica whose stack holds a line of the user's: a failure there."""
    assert crash.user is not None
    inside = ""
    if crash.library is not None:
        inside = (
            f" inside `{crash.library['function']}` ({_shown(crash.library['path'])}:"
            f"{crash.library['line']}), called from this line"
        )
    return ctx.cause(
        "run",
        "crash",
        "fail",
        f"{_where(rows, crash)}{inside}: Fatal Python error: {crash.what}. The replica process"
        " was killed, and on a TPU the job dies the same way; the last line of yours on its"
        f" stack is this one, in {crash.user['function']}()",
        crash.user,
        cores=[crash.rank] if crash.rank is not None else [],
        steps=[rows[-1].step + 1 if rows else 0],
    )


def _shown(path: str) -> str:
    """A library path as its import path: `ctypes/__init__.py`, `torch_xla/core/...`."""
    shown = path.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in shown:
            return shown.split(marker, 1)[1]
    found = re.search(r"/lib/python3\.\d+/(.+)$", shown)
    return found.group(1) if found else shown
