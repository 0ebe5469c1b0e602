"""`tpulint verify` overhead: its wall time against a bare torch_xla loop doing the same steps.

Both run as subprocesses from the repository root, `runs` times each, alternating:

    tpulint verify examples/tpu_unready/model.py:LitClassifier --cores 8 --steps S --json
    python bench/bare_xla_loop.py --cores 8 --steps S --epochs E

Both pay for starting Python and importing torch and torch_xla; verify also starts its child
process, imports Lightning, builds a Trainer and records every step. The example module has
findings (a data-dependent shape, a `.item()` in the step), so verify is expected to report a
failure (exit status 1): the measurement is its run time, not its verdict.
"""

from __future__ import annotations

import json
from pathlib import Path

from measure import run_measured
from suite import BENCH_DIR, Progress, Results

TARGET = "examples/tpu_unready/model.py:LitClassifier"


def verify_argv(tpulint: Path, cores: int, steps: int, epochs: int) -> list[str]:
    return [
        str(tpulint),
        "verify",
        TARGET,
        "--cores",
        str(cores),
        "--steps",
        str(steps),
        "--epochs",
        str(epochs),
        "--json",
    ]


def bare_argv(python: Path, cores: int, steps: int, epochs: int) -> list[str]:
    return [
        str(python),
        str(BENCH_DIR / "bare_xla_loop.py"),
        "--cores",
        str(cores),
        "--steps",
        str(steps),
        "--epochs",
        str(epochs),
    ]


def _json_tail(text: str) -> dict[str, object]:
    for line in reversed(text.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return {}


def _verify_summary(log: Path) -> dict[str, object]:
    """The verdict and step count from verify's --json report, when it printed one."""
    try:
        report = json.loads(log.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(report, dict):
        return {}
    run = report.get("run") or {}
    compiles = (report.get("checks") or {}).get("compile_stability") or {}
    return {
        "verdict": report.get("verdict"),
        "run_seconds": run.get("seconds"),
        "steps": run.get("steps"),
        "compiles_total": compiles.get("compiles_total"),
    }


def run_verify_overhead(
    *,
    repo: Path,
    tpulint: Path,
    python: Path,
    cores: int,
    steps: int,
    epochs: int,
    runs: int,
    log_dir: Path,
    progress: Progress,
    nice: int,
) -> Results:
    out: Results = {}
    commands = {
        "verify": verify_argv(tpulint, cores, steps, epochs),
        "bare": bare_argv(python, cores, steps, epochs),
    }
    for rep in range(runs):
        for name, argv in commands.items():
            log_name = f"verify.r{rep}.{name}"
            result = run_measured(
                argv, cwd=repo, log_dir=log_dir, name=log_name, timeout=1800, nice=nice
            )
            if name == "bare":
                result.extra = _json_tail(result.stdout_tail)
            else:
                result.extra = _verify_summary(log_dir / f"{log_name}.out")
            result.stdout_tail = result.stdout_tail[-500:]
            progress(
                f"{log_name}: {result.wall:.1f} s wall, {result.cpu:.1f} s CPU, "
                f"rc={result.returncode}"
            )
            out.setdefault(name, []).append(result.to_json())
    return out
