"""What only a TPU shows: how long XLA took to compile each graph, how much of each core's HBM
the run used against its limit, and how long the device took for a step. Parent process only;
standard library only.

The evidence comes from the cores' rows (child/recorder.py, child/evidence.py): torch_xla's
`CompileTime` samples, joined to the graph compiled in that process in the same order; on a
few steps after warm-up, `xm.get_memory_info()` of the core's device and the wall time of the
step with the device's queue drained before and after (`xm.wait_device_ops()`: the host runs
up to 32 computations ahead of a TPU, so its own step time says little). On emulated cores
these say nothing about a TPU and are reported as not available.
"""

from __future__ import annotations

import statistics
from typing import Any

from tpulint.runtime.judge.graphs import Graph

EMULATED = (
    "not available on emulated cores: XLA:CPU's compile times, memory and step times say"
    " nothing about a TPU's (run verify on a TPU VM)"
)


def hardware_evidence(
    events: list[dict[str, Any]], graphs: list[Graph], emulated: bool
) -> dict[str, Any]:
    if emulated:
        return {"available": False, "reason": EMULATED}
    memory: dict[int, dict[str, int]] = {}
    device_seconds: list[float] = []
    errors: set[str] = set()
    for event in events:
        sample = event.get("hardware")
        if event["kind"] != "step" or not sample:
            continue
        rank = int(event.get("rank") or 0)
        if "device_seconds" in sample:
            device_seconds.append(float(sample["device_seconds"]))
        if "memory" in sample:
            info = sample["memory"]
            seen = memory.setdefault(rank, {})
            used = int(info.get("peak_bytes_used", info.get("bytes_used", 0)))
            seen["peak_bytes"] = max(seen.get("peak_bytes", 0), used)
            seen["limit_bytes"] = int(info.get("bytes_limit", 0))
        errors |= {sample[k] for k in ("memory_error", "device_seconds_error") if k in sample}
    compile_seconds = [
        {"hash": g.hash, "seconds": g.compile_seconds, "memory_gb": g.memory}
        for g in graphs
        if g.compile_seconds is not None
    ]
    return {
        "available": True,
        "compile_seconds": compile_seconds,
        "compile_seconds_total": round(sum(g["seconds"] for g in compile_seconds), 3),
        "hbm": {str(rank): value for rank, value in sorted(memory.items())},
        "device_step_seconds": {
            "samples": device_seconds,
            "median": statistics.median(device_seconds) if device_seconds else None,
        },
        "errors": sorted(errors),
    }


def hardware_lines(evidence: dict[str, Any]) -> list[str]:
    """The text report's section."""
    if not evidence:
        return []
    lines = ["Hardware (TPU)"]
    if not evidence.get("available"):
        return [*lines, f"  {evidence.get('reason')}"]
    compiles = evidence.get("compile_seconds") or []
    if compiles:
        slowest = max(compiles, key=lambda g: g["seconds"])
        lines.append(
            f"  compile: {evidence['compile_seconds_total']:.1f}s over {len(compiles)} graphs;"
            f" slowest {slowest['seconds']:.1f}s (graph {slowest['hash'][:12]})"
        )
    else:
        lines.append("  compile: not recorded")
    hbm = evidence.get("hbm") or {}
    if hbm:
        peaks = [v["peak_bytes"] for v in hbm.values()]
        limit = max(v["limit_bytes"] for v in hbm.values())
        share = f" ({max(peaks) / limit:.0%} of {_gib(limit)})" if limit else ""
        lines.append(f"  HBM peak per core: {_gib(min(peaks))} to {_gib(max(peaks))}{share}")
    else:
        lines.append("  HBM: not recorded")
    step = (evidence.get("device_step_seconds") or {}).get("median")
    samples = len((evidence.get("device_step_seconds") or {}).get("samples") or [])
    lines.append(
        f"  device step time: {step:.3f}s (median of {samples} sampled steps)"
        if step is not None
        else "  device step time: not recorded"
    )
    for error in evidence.get("errors") or []:
        lines.append(f"  not available: {error}")
    return lines


def _gib(value: int) -> str:
    return f"{value / 2**30:.2f} GiB"
