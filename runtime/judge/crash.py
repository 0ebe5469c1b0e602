"""A replica process that died of a signal: which core, at which step, in which line.

The child enables faulthandler in every process of the run (child/stacks.py), so a replica
process killed by SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT writes "Fatal Python error" and
every thread's stack to its own stacks file (`stacks-<host>-<pid>.txt`) before it dies. The
crashing thread is the "Current thread"; the child logged which thread of which process is
which core (`replica_thread` events, with the pid: thread idents repeat across processes).
The main process then sees only a broken process pool (BrokenProcessPool).

A crash whose thread has a line of the user's on its stack is the user's code's doing (a
native extension, an op given bad input): on a TPU the job dies the same way, so it is a
verdict. A crash with no user frame is reported as a crash of the run (exit 2) with where it
happened. Parent process only; standard library only.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tpulint.runtime.frames import CodeFilter
from tpulint.runtime.judge.stacks import STACKS_GLOB, stacks_pid

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
    text: str = ""  # faulthandler's report: the fatal error and every thread's stack


def _fatal_reports(log: str, run_dir: str | Path | None) -> list[tuple[list[str], int, int | None]]:
    """(lines, index of the "Fatal Python error" line, pid or None) of every fatal report:
    the processes' stacks files, in the order they were written, then the child's log."""
    found = []
    if run_dir:
        paths = sorted(Path(run_dir).glob(STACKS_GLOB), key=lambda p: p.stat().st_mtime)
        for path in paths:
            try:
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            start = next((i for i, line in enumerate(lines) if _FATAL.match(line)), None)
            if start is not None:
                found.append((lines, start, stacks_pid(path)))
    lines = log.splitlines()
    start = next((i for i, line in enumerate(lines) if _FATAL.match(line)), None)
    if start is not None:
        found.append((lines, start, None))
    return found


def _report_lines(lines: list[str], start: int, limit: int = 400) -> list[str]:
    """faulthandler's report from its "Fatal Python error" line: up to its list of extension
    modules (its last line), another report, or `limit` lines."""
    found = [lines[start]]
    for line in lines[start + 1 : start + limit]:
        if _FATAL.match(line):
            break
        found.append(line)
        if line.startswith("Extension modules:"):
            break
    return found


def find_crash(
    log: str,
    events: list[dict[str, Any]],
    code: CodeFilter | None,
    run_dir: str | Path | None = None,
) -> Crash | None:
    """The first fatal error faulthandler reported, with its crashing thread."""
    reports = _fatal_reports(log, run_dir)
    if not reports:
        return None
    lines, start, pid = reports[0]
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
    threads = [e for e in events if e["kind"] == "replica_thread"]
    ranks = {e["ident"]: e["rank"] for e in threads if pid is None or e.get("pid") == pid}
    crash = Crash(what, _SIGNALS.get(what), ranks.get(ident) if ident is not None else None, frames)
    crash.text = "\n".join(_report_lines(lines, start)).rstrip()
    for path, line, function in frames:
        site = {"path": path, "line": line, "function": function, "user": False}
        if code is not None and code.is_user(path):
            crash.user = {**site, "user": True}
            break
        if crash.library is None:
            crash.library = site
    return crash


# Signals the emulated runtime itself dies of (PJRT CPU's collectives across replica threads
# have been seen to segfault inside `xla_rendezvous`'s `.item()`, with no user code running).
_RUNTIME_SIGNALS = {"SIGSEGV", "SIGABRT", "SIGBUS"}


def emulation_fault(outcome: Any, run_dir: str | Path | None) -> str | None:
    """A crash of the emulated cores inside torch_xla itself, or None.

    The crashing thread's innermost frame is torch_xla's and no frame on it is the user's: the
    emulation failed, not the module: the native code that crashed is PJRT's CPU client, and
    a TPU runs the same collectives in libtpu. One line: core, signal, where."""
    if outcome.status != "crashed":
        return None
    target = outcome.first("target") or {}
    crash = find_crash(outcome.log, outcome.events, CodeFilter(target.get("roots", [])), run_dir)
    if crash is None or crash.user is not None or crash.signal not in _RUNTIME_SIGNALS:
        return None
    library = crash.library
    if library is None or "/torch_xla/" not in library["path"].replace("\\", "/"):
        return None
    rows = [e for e in outcome.events if e["kind"] == "step"]
    step = max((e["step"] for e in rows), default=-1) + 1
    core = f"core {crash.rank}" if crash.rank is not None else "a replica"
    return (
        f"{core} died of {crash.signal} at step {step} in `{library['function']}`"
        f" ({_shown(library['path'])}:{library['line']})"
    )


def _where(rows: list[Any], crash: Crash) -> str:
    step = rows[-1].step + 1 if rows else 0
    core = f"core {crash.rank}" if crash.rank is not None else "a replica"
    return f"{core} died of {crash.signal or crash.what} at step {step}"


_TRACEBACK_FRAME = re.compile(
    r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)'
)


def launcher_error(outcome: Any) -> dict[str, Any] | None:
    """`fit` raised in the process that starts the cores, and no core reported anything: an
    exception of the launcher (Lightning's XLA launcher pickles fit's arguments for
    `xmp.spawn`'s process pool: a data loader over a generator cannot be sent), or of the
    Trainer's setup before any core ran."""
    if any(e["kind"] in ("replica_error", "step") for e in outcome.events):
        return None
    return next((e for e in outcome.events if e["kind"] == "fit_error"), None)


def launcher_place(error: dict[str, Any], code: CodeFilter, cwd: str | None = None) -> str:
    """` (raised by trainer.fit in the process that starts the cores, ...)`: the innermost
    library frame and the last line of the user's on the traceback."""
    user = library = None
    for line in (error.get("traceback") or "").splitlines():
        match = _TRACEBACK_FRAME.match(line)
        if not match:
            continue
        site = (match["path"], int(match["line"]), match["function"])
        if code.is_user(site[0]):
            user = site
        elif "/tpulint/" not in site[0].replace("\\", "/"):
            library = site
    inside = f" in `{library[2]}` ({_shown(library[0])}:{library[1]})" if library else ""
    yours = (
        f"; the last line of yours on its stack: {_relative(user[0], cwd)}:{user[1]} in {user[2]}()"
        if user
        else ""
    )
    return (
        f" (raised{inside} in the process that starts the cores, before any core ran a step"
        f"{yours}; -v shows the traceback)"
    )


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


def _relative(path: str, cwd: str | None) -> str:
    relative = os.path.relpath(path, cwd)
    return path if relative.startswith("..") else relative


def _shown(path: str) -> str:
    """A library path as its import path: `ctypes/__init__.py`, `torch_xla/core/...`."""
    shown = path.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in shown:
            return shown.split(marker, 1)[1]
    found = re.search(r"/lib/python3\.\d+/(.+)$", shown)
    return found.group(1) if found else shown
