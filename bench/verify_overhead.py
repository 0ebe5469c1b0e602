"""`tpulint verify` overhead: its wall time against a bare torch_xla loop doing the same steps,
and what validation adds.

Three commands, run from the repository root, `runs` times each, alternating:

    verify        tpulint verify examples/tpu_ready/model.py:LitClassifier --cores 8 --json
    verify_noval  the same module without its validation_step (a subclass in a temporary
                  file), so the difference is what judging validation costs
    bare          python bench/bare_xla_loop.py --cores 8 --steps S --epochs E --variant ready

verify runs with its defaults (3 epochs, every step of the 7-step epochs, a validation run at
the end of every epoch); the bare loop trains the same epochs and steps. All three pay for
starting Python and importing torch and torch_xla; verify also starts its child process,
imports Lightning, builds a Trainer, records every step and judges.

    .venv/bin/python bench/verify_overhead.py --runs 5      # standalone: prints the table

With `--baseline REPO` (another checkout with its own .venv, e.g. the main branch), a fourth
command runs that checkout's `tpulint verify` on the same module from its directory, in the
same alternation: `verify / baseline` is what the changes between the two cost (the memory
probe's saved-tensor hooks, for instance), measured under the same load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from measure import run_measured
from suite import BENCH_DIR, Progress, Results

REPO = BENCH_DIR.parent
TARGET = "examples/tpu_ready/model.py:LitClassifier"
# examples/tpu_ready: 1000 samples over 8 cores, batches of 16 with drop_last: 7 steps.
STEPS, EPOCHS, BATCH = 7, 3, 16

WITHOUT_VALIDATION = '''"""examples/tpu_ready's LitClassifier without its validation loop."""
import sys

sys.path.insert(0, {directory!r})

from lightning.pytorch import LightningModule
from model import LitClassifier


class WithoutValidation(LitClassifier):
    validation_step = LightningModule.validation_step
    val_dataloader = LightningModule.val_dataloader
'''


def verify_argv(tpulint: Path, target: str, cores: int) -> list[str]:
    return [str(tpulint), "verify", target, "--cores", str(cores), "--json"]


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
        "--batch-size",
        str(BATCH),
        "--variant",
        "ready",
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
    """The verdict, epochs and steps from verify's --json report, when it printed one."""
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
        "epochs": run.get("epochs"),
        "validation_batches": len(report.get("validation") or []),
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
    baseline: Path | None = None,
) -> Results:
    out: Results = {}
    with tempfile.TemporaryDirectory(prefix="tpulint-bench-") as scratch:
        module = Path(scratch) / "without_validation.py"
        module.write_text(WITHOUT_VALIDATION.format(directory=str(repo / "examples/tpu_ready")))
        commands = {
            "verify": verify_argv(tpulint, TARGET, cores),
            "verify_noval": verify_argv(tpulint, f"{module}:WithoutValidation", cores),
            "bare": bare_argv(python, cores, steps, epochs),
        }
        directories = {name: repo for name in commands}
        if baseline is not None:
            # Right after verify: the pair runs under the same load.
            baseline_argv = verify_argv(baseline / ".venv/bin/tpulint", TARGET, cores)
            commands = {"verify": commands["verify"], "baseline": baseline_argv, **commands}
            directories["baseline"] = baseline
        for rep in range(runs):
            for name, argv in commands.items():
                log_name = f"verify.r{rep}.{name}"
                result = run_measured(
                    argv,
                    cwd=directories[name],
                    log_dir=log_dir,
                    name=log_name,
                    timeout=1800,
                    nice=nice,
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


def paired_ratio(results: Results, top: str, bottom: str) -> float:
    """Median over repetitions of wall(top) / wall(bottom), pairing repetition by repetition
    (the two ran back to back, under the same load)."""
    pairs = zip(results.get(top, []), results.get(bottom, []), strict=False)
    return statistics.median(a["wall"] / b["wall"] for a, b in pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--nice", type=int, default=0)
    parser.add_argument("--log-dir", type=Path, default=Path(tempfile.mkdtemp(prefix="bench-")))
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="REPO",
        help="another checkout (with its .venv) whose verify runs alongside, e.g. ../main",
    )
    args = parser.parse_args(argv)
    bin_dir = Path(sys.executable).parent
    results = run_verify_overhead(
        repo=REPO,
        tpulint=bin_dir / "tpulint",
        python=Path(sys.executable),
        cores=8,
        steps=STEPS,
        epochs=EPOCHS,
        runs=args.runs,
        log_dir=args.log_dir,
        progress=lambda message: print(message, file=sys.stderr, flush=True),
        nice=args.nice,
        baseline=args.baseline.resolve() if args.baseline else None,
    )
    for name, runs in results.items():
        walls = sorted(r["wall"] for r in runs)
        print(
            f"{name:13} wall median {statistics.median(walls):5.2f} s"
            f" (min {walls[0]:.2f}, max {walls[-1]:.2f}) over {len(walls)} runs"
        )
    print(f"verify / bare loop:       {paired_ratio(results, 'verify', 'bare'):.2f}x")
    print(f"verify / without validation: {paired_ratio(results, 'verify', 'verify_noval'):.2f}x")
    if args.baseline:
        ratio = paired_ratio(results, "verify", "baseline")
        print(f"verify / baseline ({args.baseline}): {ratio:.3f}x")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
