"""Start-up and warm-run speed, as ratios to `python -c "import click"` measured in the same run.

What a user pays on every call from pre-commit, an editor or CI when nothing (or almost
nothing) has to be analysed:

    python+click   python -c "import click": the interpreter and the CLI library, the floor
    version        tpulint --version
    warm           tpulint check PACKAGE, every file answered from the cache
    one cached     tpulint check FILE, a small file answered from the cache
    cold one       tpulint check --no-cache FILE
    cold           tpulint check --no-cache PACKAGE (every file analysed, 2 workers)

Every repetition runs all commands back to back; each time is divided by that repetition's
python+click time and the median of those ratios is reported (so a ratio compares runs made
under the same machine load). Bytecode caches are on (PYTHONDONTWRITEBYTECODE removed, one
unmeasured round first), as on a user's machine.

    .venv/bin/python bench/startup.py                      # the installed tpulint
    .venv/bin/python bench/startup.py --compare REV        # REV against the work tree

With `--compare REV`, the work tree and `git archive REV` are each installed (`pip install
--no-deps --target`) into a scratch folder and run from there, side by side in the same run,
each in its own copy of the package so that their caches do not meet. Results go to
bench/results/startup.json and a table is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
DEFAULT_CORPUS = REPO.parent.parent / "corpus"
PACKAGE = "nemo-toolkit-3.0.0"
ONE_FILE = "nemo/agents/__init__.py"  # inside the package: small, and no rule fires on it

# Targets from issue 11 (ratios to python+click, median over repetitions).
TARGETS = {"warm": 3.0, "one cached": 2.0}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus",
        type=Path,
        default=DEFAULT_CORPUS,
        help="folder holding pkgs/ (default: ../../corpus)",
    )
    parser.add_argument("--package", default=PACKAGE, help=f"package folder (default {PACKAGE})")
    parser.add_argument("--runs", type=int, default=15, help="repetitions of the fast commands")
    parser.add_argument(
        "--cold-runs", type=int, default=3, help="repetitions of the cold package run (0: skip it)"
    )
    parser.add_argument("--compare", metavar="REV", help="also measure git revision REV")
    parser.add_argument(
        "--scratch", type=Path, default=Path(tempfile.gettempdir()) / "tpulint-bench-startup"
    )
    return parser.parse_args(argv)


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPATH", None)
    env["NO_COLOR"] = "1"
    return env


def install(source: Path, target: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
    )


def export_revision(rev: str, into: Path) -> Path:
    into.mkdir(parents=True)
    archive = into.parent / f"{into.name}.tar"
    with archive.open("wb") as handle:
        subprocess.run(["git", "archive", rev], cwd=REPO, stdout=handle, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    archive.unlink()
    return into


def export_work_tree(into: Path) -> Path:
    ignore = shutil.ignore_patterns(
        ".venv",
        ".git",
        ".corpus",  # a worktree's symlink to the fetched corpus: copytree would follow it
        "__pycache__",
        ".tpulint_cache",
        "bench",
        ".pytest_cache",
        ".ruff_cache",
        "*.egg-info",
        "build",
    )
    shutil.copytree(REPO, into, ignore=ignore)
    return into


class Variant:
    """One tpulint to measure: a command prefix, an environment and its own project copy."""

    def __init__(self, name: str, prefix: list[str], env: dict[str, str], project: Path):
        self.name, self.prefix, self.env, self.project = name, prefix, env, project

    def commands(self, package: str, cold_runs: int) -> dict[str, list[str]]:
        one = f"{package}/{ONE_FILE}"
        out = {
            "version": [*self.prefix, "--version"],
            "warm": [*self.prefix, "check", "--exit-zero", "-q", package],
            "one cached": [*self.prefix, "check", "--exit-zero", "-q", one],
            "cold one": [*self.prefix, "check", "--exit-zero", "-q", "--no-cache", one],
        }
        if cold_runs:
            out["cold"] = [*self.prefix, "check", "--exit-zero", "-q", "--no-cache", package]
        return out


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"bench: {' '.join(argv)} failed ({done.returncode}): {done.stderr}")
    return elapsed


def make_project(scratch: Path, name: str, package_dir: Path) -> Path:
    project = scratch / name
    project.mkdir(parents=True)
    (project / "pyproject.toml").write_text("", encoding="utf-8")
    shutil.copytree(package_dir, project / package_dir.name)
    return project


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    package_dir = args.corpus / "pkgs" / args.package
    if not (package_dir / ONE_FILE.split("/")[0]).exists():
        raise SystemExit(f"bench: {package_dir} not found (pass --corpus, see fetch_corpus.sh)")
    if args.scratch.exists():
        shutil.rmtree(args.scratch)
    args.scratch.mkdir(parents=True)
    env = environment()
    python = sys.executable
    variants: list[Variant] = []
    if args.compare:
        for name, export in (
            (f"before ({args.compare})", lambda d: export_revision(args.compare, d)),
            ("after (work tree)", export_work_tree),
        ):
            slug = "before" if name.startswith("before") else "after"
            source = export(args.scratch / f"src-{slug}")
            target = args.scratch / f"site-{slug}"
            install(source, target)
            variants.append(
                Variant(
                    name,
                    [
                        python,
                        "-c",
                        "import sys; from tpulint.cli import main; sys.argv[0] = 'tpulint'; main()",
                    ],
                    {**env, "PYTHONPATH": str(target)},
                    make_project(args.scratch, f"project-{slug}", package_dir),
                )
            )
    else:
        tpulint = Path(python).parent / "tpulint"
        variants.append(
            Variant(
                "installed", [str(tpulint)], env, make_project(args.scratch, "project", package_dir)
            )
        )

    baseline = [python, "-c", "import click"]
    plans = {v.name: v.commands(args.package, args.cold_runs) for v in variants}
    # Unmeasured round: bytecode caches written, every cache warm.
    timed(baseline, args.scratch, env)
    for variant in variants:
        for argv in plans[variant.name].values():
            timed(argv, variant.project, variant.env)
        for key in ("warm", "one cached"):
            timed(plans[variant.name][key], variant.project, variant.env)

    times: dict[str, dict[str, list[float]]] = {v.name: {} for v in variants}
    base: list[float] = []
    cold_base: list[float] = []
    for rep in range(args.runs):
        base.append(timed(baseline, args.scratch, env))
        for variant in variants:
            for key, argv in plans[variant.name].items():
                if key == "cold":
                    continue
                times[variant.name].setdefault(key, []).append(
                    timed(argv, variant.project, variant.env)
                )
        print(f"repetition {rep + 1}/{args.runs}", file=sys.stderr)
    for rep in range(args.cold_runs):
        cold_base.append(timed(baseline, args.scratch, env))
        for variant in variants:
            times[variant.name].setdefault("cold", []).append(
                timed(plans[variant.name]["cold"], variant.project, variant.env)
            )
        print(f"cold repetition {rep + 1}/{args.cold_runs}", file=sys.stderr)

    report: dict[str, object] = {
        "package": args.package,
        "one_file": ONE_FILE,
        "runs": args.runs,
        "cold_runs": args.cold_runs,
        "compare": args.compare,
        "python+click": {"median_s": statistics.median(base), "runs": base},
        "variants": {},
    }
    rows = []
    for variant in variants:
        out = {}
        for key, values in times[variant.name].items():
            reference = cold_base if key == "cold" else base
            ratios = [v / b for v, b in zip(values, reference, strict=True)]
            out[key] = {
                "median_s": statistics.median(values),
                "median_ratio": statistics.median(ratios),
                "runs": values,
            }
            target = TARGETS.get(key)
            verdict = (
                ""
                if target is None
                else (
                    f"target <= {target:g}x: "
                    + ("met" if statistics.median(ratios) <= target else "MISSED")
                )
            )
            rows.append(
                (variant.name, key, statistics.median(values), statistics.median(ratios), verdict)
            )
        report["variants"][variant.name] = out  # type: ignore[index]

    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "startup.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(
        f"python -c 'import click': median {statistics.median(base) * 1000:.1f} ms "
        f"({args.runs} runs)"
    )
    print("| tpulint | command | median | ratio to python+click | |")
    print("|---|---|---|---|---|")
    for name, key, seconds, ratio, verdict in rows:
        print(f"| {name} | {key} | {seconds * 1000:.0f} ms | {ratio:.2f}x | {verdict} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
