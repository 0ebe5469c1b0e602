"""Where a cold tpulint run spends its time. Runs in the PROJECT venv.

    python bench/profile_cold.py FOLDER OUT.json [--py-spy PATH]

Two views of `tpulint check --no-cache FOLDER`:

1. Phases, in process, one worker (jobs=1, so nothing is hidden in a pool): the engine's and
   the runner's functions are wrapped with CPU-time counters (time.process_time, so other load
   on the machine does not inflate them) and every visit/leave handler the walker dispatches is
   wrapped too, so the walk splits into its own traversal, the shared FileContext handlers and
   each rule's handlers. Times are inclusive per wrapped function and the wrappers cost a
   little, so the per-rule figures rank the rules more than they price them.
2. Sampling (when --py-spy is given): py-spy records the real CLI run (2 worker processes,
   --subprocesses) and the samples are sorted into the same categories, per process role, to
   show what the pool costs (pickling, result passing, the serial preparation in the parent).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

CPU = time.process_time


class Timers:
    """CPU-time counters with self-time accounting: a wrapped call's time is charged to it and
    taken off the wrapped call it is nested in, so the self times add up to the total."""

    def __init__(self) -> None:
        self.self_seconds: dict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        self.stack: list[str] = []
        self.child_time: list[float] = []

    def timed_call(self, name: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if name == WALK and PREPASS in self.stack:
            name = PREPASS_WALK
        self.stack.append(name)
        self.child_time.append(0.0)
        start = CPU()
        try:
            return function(*args, **kwargs)
        finally:
            elapsed = CPU() - start
            self.stack.pop()
            children = self.child_time.pop()
            self.self_seconds[name] += elapsed - children
            self.calls[name] += 1
            if self.child_time:
                self.child_time[-1] += elapsed

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        original = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            return self.timed_call(name, original, *args, **kwargs)

        setattr(owner, attr, timed)

    def handler(self, handler: Callable[[Any], Any], name: str) -> Callable[[Any], Any]:
        def timed(node: Any) -> Any:
            return self.timed_call(name, handler, node)

        return timed


WALK = "walk traversal"
PREPASS = "semantic pre-pass (analyze_module)"
PREPASS_WALK = "semantic pre-pass: walk traversal"


def _owner_name(obj: object) -> str:
    code = getattr(obj, "code", None)
    if isinstance(code, str):
        return f"rule {code} {getattr(obj, 'name', '')}".strip()
    return f"context {type(obj).__name__}"


def instrument(timers: Timers) -> None:
    """Wrap the functions whose cost the profile reports."""
    import libcst

    from tpulint.analysis import positions, walker
    from tpulint.engine import source as engine
    from tpulint.runner import paths as runner

    timers.wrap(runner, "discover", "discovery")
    timers.wrap(runner, "read_source", "reading files")
    timers.wrap(runner, "model_of", "project model (ast summaries)")
    timers.wrap(engine, "check_source", "engine: other")
    timers.wrap(engine, "_rule_classes", "rule prefilter")
    timers.wrap(engine, "parse_suppressions", "suppression comments")
    timers.wrap(libcst, "parse_module", "libcst parse_module")
    timers.wrap(engine, "file_view", "engine: project model view")
    timers.wrap(engine, "analyze_module", PREPASS)
    timers.wrap(engine.FileContext, "__init__", "FileContext construction")
    timers.wrap(walker.Dispatcher, "walk", WALK)
    timers.wrap(positions.PositionIndex, "__init__", "positions")
    timers.wrap(positions.PositionIndex, "resolve", "positions")
    timers.wrap(engine, "positions_needed", "fix positions")
    timers.wrap(engine, "fix_edits", "fix edits")
    timers.wrap(engine, "_finish", "suppressions and TPL001")
    original_add = walker.Dispatcher.add

    def add(self: Any, obj: object, only: Any = None) -> None:
        known = [{t: len(h) for t, h in table.items()} for table in (self.enter, self.leave)]
        original_add(self, obj, only)
        label = f"handler: {_owner_name(obj)}"
        for table, counts in zip((self.enter, self.leave), known, strict=True):
            for node_type, handlers in table.items():
                start = counts.get(node_type, 0)
                handlers[start:] = [timers.handler(h, label) for h in handlers[start:]]

    walker.Dispatcher.add = add


def phases(folder: Path) -> dict[str, Any]:
    timers = Timers()
    instrument(timers)
    from tpulint.config.settings import load_config
    from tpulint.runner.paths import check_paths

    config = load_config(start=folder)
    start_cpu, start_wall = CPU(), time.perf_counter()
    run = check_paths([str(folder)], config, use_cache=False, jobs=1)
    total_cpu, total_wall = CPU() - start_cpu, time.perf_counter() - start_wall
    return {
        "folder": str(folder),
        "files_checked": run.checked,
        "diagnostics": len(run.diagnostics),
        "internal_errors": len(run.internal_errors),
        "total_cpu": total_cpu,
        "total_wall": total_wall,
        "unattributed_cpu": total_cpu - sum(timers.self_seconds.values()),
        "timers": {
            k: {"seconds": v, "calls": timers.calls[k]} for k, v in timers.self_seconds.items()
        },
    }


# --- py-spy ------------------------------------------------------------------------------

# (category, substring of a frame) in priority order: the first category whose marker occurs
# in a sample's stack wins, so the more specific markers come first.
# py-spy prints paths relative to sys.path entries ("rules/host_sync/item_in_hot_path.py",
# "tpulint/engine/source.py").
CATEGORIES = (
    ("libcst parse", "parse_module"),
    ("positions", "positions.py"),
    ("fix edits (check mode)", "fixes.py"),
    ("rules: Bindings.enter_function (annotation codegen)", "enter_function"),
    ("rules", "(rules/"),
    ("semantic pre-pass", "analyze_module"),
    ("walk: FileContext handlers", "analysis/context.py"),
    ("walk: traversal", "walker.py"),
    ("suppressions", "suppression.py"),
    ("project model (ast summaries)", "summarize"),
    ("reading files", "read_source"),
    ("discovery", "discover"),
    ("cache", "cache.py"),
    ("output", "reporting"),
    ("pool: pickling, result passing", "pickle"),
    ("pool: pickling, result passing", "_send_bytes"),
    ("pool: pickling, result passing", "_recv_bytes"),
    ("pool: process management", "concurrent/futures"),
    ("pool: process management", "multiprocessing"),
    ("imports and start-up", "_find_and_load"),
    ("waiting (idle)", "Condition.wait"),
    ("waiting (idle)", ".select"),
)


def categorize(stack: str) -> str:
    for category, marker in CATEGORIES:
        if marker in stack:
            return category
    return "other"


def summarize_raw(raw: Path) -> dict[str, Any]:
    """py-spy's raw output (`frame;frame;... count` per line) -> samples per role and category."""
    per_role: dict[str, Counter[str]] = defaultdict(Counter)
    for line in raw.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        # py-spy names forked workers after the parent: tell them apart by their entry point.
        role = "worker" if "_process_worker" in stack else "main"
        per_role[role][categorize(stack)] += int(count)
    return {role: dict(counter.most_common()) for role, counter in per_role.items()}


def sample(folder: Path, py_spy: Path, raw: Path, rate: int) -> dict[str, Any]:
    tpulint = Path(sys.executable).parent / "tpulint"
    argv = [
        str(py_spy),
        "record",
        "--subprocesses",
        "-r",
        str(rate),
        "-f",
        "raw",
        "-o",
        str(raw),
        "--",
        str(tpulint),
        "check",
        "--no-cache",
        "-qq",
        str(folder),
    ]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - start
    return {
        "rate_hz": rate,
        "wall": wall,
        "returncode": done.returncode,
        "samples": summarize_raw(raw) if raw.is_file() else {},
        "stderr": done.stderr[-800:],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--py-spy", type=Path, default=None)
    parser.add_argument("--rate", type=int, default=50)
    args = parser.parse_args()
    folder = args.folder.resolve()
    result: dict[str, Any] = {}
    if args.py_spy is not None:
        raw = args.out.with_suffix(".pyspy.txt")
        result["py_spy"] = sample(folder, args.py_spy, raw, args.rate)
    result["phases"] = phases(folder)
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
