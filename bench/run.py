"""The benchmark suite's entry point: tpulint against TorchFix, Fixit and the libcst floor.

    python bench/run.py [--corpus PATH] [--runs N] [--quick] [--skip-peers] [--skip-verify]

Run it with the project's Python (the venv tpulint is installed in). It fetches the corpus when
absent, installs the peers into their own venvs under bench/.cache/, copies the corpus to a
scratch folder, measures every tool there (see suite.py), measures `tpulint verify`'s
overhead, profiles a cold tpulint run, writes bench/results/latest.json (and a dated copy),
and regenerates docs/benchmarks.md and docs/benchmarks.png from it. See bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

# bench/ is not a package: its modules import each other by name.
import envs
from corpus import CorpusError, ensure_corpus, make_scratch, warm_page_cache
from measure import load_average
from suite import (
    BENCH_DIR,
    Runner,
    Scope,
    Settings,
    Tools,
    default_tpulint,
    run_scope,
    run_startup,
)
from verify_overhead import run_verify_overhead

REPO = BENCH_DIR.parent
CACHE = BENCH_DIR / ".cache"
RESULTS = BENCH_DIR / "results"
LARGE_PACKAGE = "nemo-toolkit-3.0.0"


def default_fetch_script() -> Path:
    shared = REPO.parent / "shared" / "corpus" / "fetch.sh"
    return shared if shared.is_file() else BENCH_DIR / "fetch_corpus.sh"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="tpulint benchmarks (see bench/README.md)")
    parser.add_argument(
        "--corpus",
        type=Path,
        default=CACHE / "corpus",
        help="corpus folder holding pkgs/ (fetched there when absent) "
        "[default: bench/.cache/corpus]",
    )
    parser.add_argument(
        "--fetch-script",
        type=Path,
        default=default_fetch_script(),
        help="the corpus fetch script [default: ../shared/corpus/fetch.sh, "
        "else bench/fetch_corpus.sh]",
    )
    parser.add_argument("--runs", type=int, default=3, help="repetitions of every measurement")
    parser.add_argument(
        "--peer-runs",
        type=int,
        default=None,
        help="repetitions of TorchFix and Fixit [default: --runs]",
    )
    parser.add_argument("--quick", action="store_true", help="one repetition of everything")
    parser.add_argument("--skip-peers", action="store_true", help="no TorchFix, no Fixit")
    parser.add_argument("--skip-verify", action="store_true", help="no verify overhead")
    parser.add_argument("--skip-profile", action="store_true", help="no profile of tpulint")
    parser.add_argument(
        "--scopes",
        default=f"corpus,{LARGE_PACKAGE}",
        help="comma-separated: corpus and/or package folder names",
    )
    parser.add_argument(
        "--scratch",
        type=Path,
        default=Path(tempfile.gettempdir()) / "tpulint-bench",
        help="scratch folder (outside the repository) the tools run in",
    )
    parser.add_argument("--verify-steps", type=int, default=7)
    parser.add_argument("--verify-epochs", type=int, default=3)
    parser.add_argument(
        "--nice",
        type=int,
        default=0,
        help="run the measured commands at this niceness (negative needs root)",
    )
    parser.add_argument("--no-docs", action="store_true", help="write the JSON only")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs = 1
    if args.peer_runs is None or args.peer_runs > args.runs:
        args.peer_runs = args.runs
    return args


def log(message: str) -> None:
    stamp = datetime.datetime.now().strftime("%H:%M:%S")
    print(f"[{stamp}] {message}", flush=True)


def check_scratch(scratch: Path) -> Path:
    scratch = scratch.resolve()
    if scratch == REPO or REPO in scratch.parents:
        raise SystemExit("bench: --scratch must be outside the repository (see corpus.py)")
    return scratch


def prepare_envs(args: argparse.Namespace) -> dict[str, Path]:
    """Create the venvs; returns their paths by name."""
    wanted = ["tools"] + ([] if args.skip_peers else ["torchfix", "fixit"])
    specs = envs.venvs()
    paths = {}
    for name in wanted:
        log(f"venv {name}: {' '.join(specs[name].requirements)}")
        paths[name] = envs.ensure(specs[name], CACHE, RESULTS / "logs" / "pip.log")
    return paths


def make_tools(args: argparse.Namespace) -> Tools:
    specs = envs.venvs()
    peers = not args.skip_peers
    return Tools(
        project_python=Path(sys.executable),
        tpulint=default_tpulint(),
        torchfix=specs["torchfix"].bin(CACHE, "torchfix") if peers else None,
        fixit=specs["fixit"].bin(CACHE, "fixit") if peers else None,
        torchfix_python=specs["torchfix"].python(CACHE) if peers else None,
    )


def select_files(folder: Path, out: Path) -> dict[str, Any]:
    subprocess.run(
        [sys.executable, str(BENCH_DIR / "select_files.py"), str(folder), str(out)], check=True
    )
    return json.loads(out.read_text(encoding="utf-8"))


def pick_edit_file(selection: dict[str, Any]) -> Path:
    """The tpulint-parsed file of median size: a typical file to edit."""
    files = sorted(selection["tpulint_parses"], key=lambda p: (os.path.getsize(p), p))
    return Path(files[len(files) // 2])


def make_scopes(args: argparse.Namespace, pkgs: Path, meta: Path) -> list[Scope]:
    scopes = []
    large = pkgs / LARGE_PACKAGE
    edit_source = large if large.is_dir() else pkgs
    edit = pick_edit_file(select_files(edit_source, meta / "edit-source.json"))
    for name in [s.strip() for s in args.scopes.split(",") if s.strip()]:
        folder = pkgs if name == "corpus" else pkgs / name
        if not folder.is_dir():
            raise SystemExit(f"bench: no folder {folder} for scope {name!r}")
        selection = meta / f"selection-{name}.json"
        chosen = select_files(folder, selection)
        target = edit if str(edit).startswith(str(folder) + os.sep) else pick_edit_file(chosen)
        scopes.append(Scope(name, folder, selection, target))
    return scopes


def git_state() -> dict[str, str]:
    """The commit measured and whether the work tree had changes (read-only git calls)."""

    def git(*argv: str) -> str:
        done = subprocess.run(["git", *argv], cwd=REPO, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    return {
        "commit": git("rev-parse", "HEAD"),
        "dirty": "yes" if git("status", "--porcelain", "--untracked-files=no") else "no",
    }


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def versions(venv_paths: dict[str, Path], tools: Tools) -> dict[str, Any]:
    project = envs.installed_versions(
        tools.project_python, ["tpulint", "libcst", "click", "torch", "torch_xla", "lightning"]
    )
    out: dict[str, Any] = {"project": project}
    for name, packages in (
        ("torchfix", ["torchfix", "libcst", "flake8"]),
        ("fixit", ["fixit", "libcst", "trailrunner"]),
        ("tools", ["matplotlib", "py-spy", "pyinstrument"]),
    ):
        if name in venv_paths:
            out[name] = envs.installed_versions(venv_paths[name] / "bin" / "python", packages)
    return out


def machine() -> dict[str, Any]:
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "platform": platform.platform(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
    }


def selection_stats(scopes: list[Scope]) -> dict[str, Any]:
    out = {}
    for scope in scopes:
        data = json.loads(scope.selection.read_text(encoding="utf-8"))
        out[scope.name] = {
            "stats": data["stats"],
            "edited_file": str(scope.edit_file),
            "folder": str(scope.folder),
        }
    return out


def run_profile(
    args: argparse.Namespace, scopes: list[Scope], venv_paths: dict[str, Path], meta: Path
) -> dict[str, Any]:
    scope = scopes[0]
    out = meta / "profile.json"
    py_spy = venv_paths["tools"] / "bin" / "py-spy"
    argv = [sys.executable, str(BENCH_DIR / "profile_cold.py"), str(scope.folder), str(out)]
    if py_spy.is_file():
        argv += ["--py-spy", str(py_spy)]
    log(f"profile of a cold tpulint run on {scope.name}")
    subprocess.run(argv, check=True, cwd=args.scratch)
    data = json.loads(out.read_text(encoding="utf-8"))
    data["scope"] = scope.name
    return data


def measure_all(
    args: argparse.Namespace, runner: Runner, scopes: list[Scope], empty_list: Path
) -> dict[str, Any]:
    results: dict[str, Any] = {"startup": run_startup(runner, empty_list), "scopes": {}}
    for scope in scopes:
        warm_page_cache(json.loads(scope.selection.read_text())["discovered"])
        results["scopes"][scope.name] = run_scope(runner, scope)
        checkpoint(results)
    if not args.skip_verify:
        log("verify overhead")
        results["verify"] = run_verify_overhead(
            repo=REPO,
            tpulint=runner.tools.tpulint,
            python=runner.tools.project_python,
            cores=8,
            steps=args.verify_steps,
            epochs=args.verify_epochs,
            runs=args.runs,
            log_dir=runner.settings.log_dir,
            progress=log,
            nice=args.nice,
        )
    return results


def checkpoint(results: dict[str, Any]) -> None:
    """What is measured so far, in case a later step fails."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "partial.json").write_text(json.dumps(results, indent=1), encoding="utf-8")


def write_results(data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    latest = RESULTS / "latest.json"
    text = json.dumps(data, indent=1)
    latest.write_text(text, encoding="utf-8")
    stamp = data["meta"]["started"].replace(":", "").replace("-", "")[:15]
    (RESULTS / f"run-{stamp}.json").write_text(text, encoding="utf-8")
    return latest


def write_docs(venv_paths: dict[str, Path], latest: Path) -> None:
    python = venv_paths["tools"] / "bin" / "python"
    subprocess.run(
        [
            str(python),
            str(BENCH_DIR / "report.py"),
            str(latest),
            str(REPO / "docs" / "benchmarks.md"),
            str(REPO / "docs" / "benchmarks.png"),
        ],
        check=True,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.scratch = check_scratch(args.scratch)
    if not default_tpulint().is_file():
        raise SystemExit(f"bench: use the project's Python (no tpulint beside {sys.executable})")
    started, clock = datetime.datetime.now(datetime.timezone.utc), time.perf_counter()
    load_start = load_average()
    git_at_start = git_state()  # the engine measured (others may commit during a long run)
    log_dir = RESULTS / "logs"
    shutil.rmtree(log_dir, ignore_errors=True)
    try:
        pkgs = ensure_corpus(args.corpus.resolve(), args.fetch_script, log_dir / "fetch.log")
    except (CorpusError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"bench: {exc}") from None
    venv_paths = prepare_envs(args)
    tools = make_tools(args)
    log(f"copying {pkgs} to {args.scratch}")
    scratch_pkgs = make_scratch(pkgs, args.scratch)
    meta_dir = args.scratch / "meta"
    meta_dir.mkdir()
    empty_list = meta_dir / "empty.json"
    empty_list.write_text("{}", encoding="utf-8")
    scopes = make_scopes(args, scratch_pkgs, meta_dir)
    settings = Settings(
        args.scratch, log_dir, args.runs, args.peer_runs, args.skip_peers, args.nice
    )
    runner = Runner(tools, settings, log)
    results = measure_all(args, runner, scopes, empty_list)
    if not args.skip_profile:
        results["profile"] = run_profile(args, scopes, venv_paths, meta_dir)
    results["meta"] = {
        "started": started.isoformat(timespec="seconds"),
        "duration_seconds": time.perf_counter() - clock,
        "command": " ".join(["python", "bench/run.py", *(sys.argv[1:] if argv is None else argv)]),
        "runs": args.runs,
        "peer_runs": 0 if args.skip_peers else args.peer_runs,
        "nice": args.nice,
        "load_start": load_start,
        "load_end": load_average(),
        "corpus": str(pkgs),
        "scratch": str(args.scratch),
        "large_package": LARGE_PACKAGE,
        "machine": machine(),
        "versions": versions(venv_paths, tools),
        "git": git_at_start,
        "verify": {"cores": 8, "steps": args.verify_steps, "epochs": args.verify_epochs},
    }
    results["files"] = selection_stats(scopes)
    latest = write_results(results)
    log(f"results: {latest}")
    if not args.no_docs:
        write_docs(venv_paths, latest)
        log("docs/benchmarks.md and docs/benchmarks.png written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
