"""The serial part of a cold `tpulint check`: what the parent process does alone.

    python bench/serial_part.py FOLDER [--jobs N] [--select ALL]

Runs `check_paths(FOLDER, use_cache=False, jobs=N)` in this process (the CLI's runner, with
its worker pools) with timestamps at the phase boundaries, and prints one JSON object:

- `before_pool`: from the start of the run to the fork of the first worker (discovery,
  reading, hashing, the summary keys);
- `between_pools`: from the last summary received to the fork of the first checking worker
  (building the project model, the rest of the engine's import); with fewer files than the
  runner summarises in parallel, there is no summarising pool and `before_pool` includes
  the summaries;
- `after_pool`: from the last checking result to the rendered report (sorting, rendering);
- `serial`: their sum; `total`: the whole run. Each as wall seconds and as the parent's CPU
  seconds (on a loaded machine the parent's CPU time is the better estimate of what the
  serial part costs on an idle one: wall time also counts waiting for a CPU), and as the CPU
  seconds of the parent's main thread alone (`thread`: the process's CPU time also counts
  the engine's import, which runs on another thread while the workers summarise the files).

Receiving the summaries while the workers still compute them overlaps with the workers and
is not counted as serial; what the parent does after the last summary is. Works with any
tpulint revision (run it with that revision first on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

START_WALL = time.perf_counter()
START_CPU = time.process_time()
START_THREAD = time.thread_time()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--select")
    args = parser.parse_args()

    import tpulint.runner.pool as pool
    from tpulint.config.settings import Config, load_config
    from tpulint.reporting import ReportOptions, render
    from tpulint.runner.paths import check_paths

    marks: dict[str, tuple[float, float, float]] = {}

    def mark(name: str) -> None:
        marks[name] = (
            time.perf_counter() - START_WALL,
            time.process_time() - START_CPU,
            time.thread_time() - START_THREAD,
        )

    original_map = pool.Pool.map
    pools: list[str] = []

    def traced_map(self, function, batches, *rest, **keywords):  # type: ignore[no-untyped-def]
        index = len(pools)
        pools.append(getattr(function, "__name__", "?"))
        mark(f"pool{index} start")
        yield from original_map(self, function, batches, *rest, **keywords)
        mark(f"pool{index} end")

    pool.Pool.map = traced_map  # type: ignore[method-assign]
    config = load_config(start=Path(args.folder))
    if args.select:
        config = Config.from_mapping({"select": args.select.split(",")}, root=config.root)
    mark("start")
    run = check_paths([args.folder], config, use_cache=False, jobs=args.jobs)
    render("json", run.diagnostics, ReportOptions(files_checked=run.checked))
    mark("end")

    def span(start: str, end: str) -> dict[str, float]:
        (w0, c0, t0), (w1, c1, t1) = marks[start], marks[end]
        return {"wall": round(w1 - w0, 3), "cpu": round(c1 - c0, 3), "thread": round(t1 - t0, 3)}

    if pools == ["_summarize_one", "_check_one"]:
        parts = {
            "before_pool": span("start", "pool0 start"),
            "between_pools": span("pool0 end", "pool1 start"),
            "after_pool": span("pool1 end", "end"),
        }
    elif pools == ["_check_one"]:  # few files: summarised in this process, all serial
        parts = {
            "before_pool": span("start", "pool0 start"),
            "between_pools": {"wall": 0.0, "cpu": 0.0, "thread": 0.0},
            "after_pool": span("pool0 end", "end"),
        }
    else:
        raise SystemExit(f"serial_part: unexpected worker pools {pools}")
    serial = {k: round(sum(p[k] for p in parts.values()), 3) for k in ("wall", "cpu", "thread")}
    print(
        json.dumps(
            {
                **parts,
                "serial": serial,
                "total": span("start", "end"),
                "files": run.checked,
                "libcst_parsed": getattr(run, "libcst_parsed", None),
                "findings": len(run.diagnostics),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
