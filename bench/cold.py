"""Cold runs against the libcst parse floor, before and after a change, in one run.

    .venv/bin/python bench/cold.py --corpus PATH [--compare REV] [--runs N]
        [--scopes corpus,nemo-toolkit-3.0.0,lightning-bolts-0.7.0] [--jobs 2]

For each scope (the whole corpus, or a package folder of it) and each repetition, back to
back and in an order that rotates between repetitions: the floor (`floor.py`: read and
`libcst.parse_module` every file tpulint reads, `select_files.py`'s `discovered`, in a pool of
`--jobs` forked processes: issue 18's floor, "tpulint doing all its work faster than merely
parsing every file with libcst"), with `--old-floor` also the old floor (the files a rule's
text prefilter matches, `tpulint_parses`; reported, not used for the ratios),
`tpulint check --no-cache -v` of
the work tree and, with `--compare REV`, of revision REV (each installed with `pip install
--no-deps --target` into a scratch folder, as startup.py does). Every tpulint time is divided
by the floor's time of the same repetition; the medians of those ratios are reported, with
the load average. The floor's time is measured inside it (after `import libcst`), so the
ratio charges tpulint its start-up; `-v` gives the files each version parsed with libcst.

Then, once per version and scope (alternating), `serial_part.py` measures what the parent
process does alone, and from it and the run's CPU time the figures for 16 processes are
projected (Amdahl): T(16) = S + (T(1) - S) / 16, with S the serial part (the CPU time of
the parent's main thread in its serial phases) and T(1) the run's CPU time (all processes),
against the floor's T(1) / 16 (parsing files is all parallel).

Writes bench/results/cold.json and prints the tables.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from measure import load_average, run_measured  # noqa: E402
from startup import export_revision, export_work_tree, install  # noqa: E402
from suite import measured_environment  # noqa: E402

REPO = BENCH.parent
RESULTS = BENCH / "results"
DEFAULT_SCOPES = "corpus,nemo-toolkit-3.0.0,lightning-bolts-0.7.0"
PARSED = re.compile(r"(\d+) parsed with libcst")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="folder holding pkgs/")
    parser.add_argument("--compare", metavar="REV", help="also measure git revision REV")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scopes", default=DEFAULT_SCOPES)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes of every tool")
    parser.add_argument("--skip-serial", action="store_true", help="no serial-part runs")
    parser.add_argument(
        "--no-warmup",
        action="store_true",
        help="no unmeasured first round (the scratch copy was just written: its files are in"
        " the page cache, and pip compiled the installed versions' bytecode)",
    )
    parser.add_argument(
        "--old-floor",
        action="store_true",
        help="also measure the old floor (text-prefiltered files), as a second figure",
    )
    parser.add_argument(
        "--scratch", type=Path, default=Path(tempfile.gettempdir()) / "tpulint-bench-cold"
    )
    return parser.parse_args(argv)


def prepare(args: argparse.Namespace) -> tuple[Path, dict[str, dict[str, object]]]:
    """The scratch copy of the corpus and the versions to measure."""
    if args.scratch.exists():
        shutil.rmtree(args.scratch)
    root = args.scratch / "project"
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    shutil.copytree(args.corpus / "pkgs", root / "pkgs")
    env = measured_environment()
    env.pop("PYTHONPATH", None)
    env["NO_COLOR"] = "1"
    versions: dict[str, dict[str, object]] = {}
    sources = [("after", export_work_tree)]
    if args.compare:
        sources.insert(0, ("before", lambda d: export_revision(args.compare, d)))
    for name, export in sources:
        source = export(args.scratch / f"src-{name}")
        site = args.scratch / f"site-{name}"
        install(source, site)
        versions[name] = {"site": site, "env": {**env, "PYTHONPATH": str(site)}}
    return root, versions


def tpulint_argv(jobs: int, folder: str) -> list[str]:
    launcher = "import sys; from tpulint.cli import main; sys.argv[0] = 'tpulint'; main()"
    return [sys.executable, "-c", launcher, "check", "--no-cache", "-v", "--exit-zero", "-q",
            "-j", str(jobs), folder]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    root, versions = prepare(args)
    env = measured_environment()
    scopes = [s.strip() for s in args.scopes.split(",") if s.strip()]
    folders = {s: "pkgs" if s == "corpus" else f"pkgs/{s}" for s in scopes}
    lists = {}
    for scope, folder in folders.items():
        out = args.scratch / f"files-{scope}.json"
        subprocess.run(
            [sys.executable, str(BENCH / "select_files.py"), str(root / folder), str(out)],
            check=True,
            cwd=REPO,
        )
        lists[scope] = out
    logs = RESULTS / "logs" / "cold"
    # One unmeasured round: bytecode caches written, files in the page cache.
    for scope, folder in folders.items() if not args.no_warmup else ():
        for name, version in versions.items():
            run_measured(tpulint_argv(args.jobs, folder), cwd=root, env=version["env"],
                         log_dir=logs, name=f"warmup-{name}-{scope}")  # fmt: skip
    runs: dict[str, dict[str, list[dict[str, object]]]] = {s: {} for s in scopes}
    order = ["floor", *(["old-floor"] if args.old_floor else []), *versions]
    for rep in range(args.runs):
        rotated = order[rep % len(order) :] + order[: rep % len(order)]
        for scope, folder in folders.items():
            for what in rotated:
                tag = f"{what}-{scope}-r{rep}"
                if what in ("floor", "old-floor"):
                    key = "discovered" if what == "floor" else "tpulint_parses"
                    argv = [sys.executable, str(BENCH / "floor.py"), str(lists[scope]),
                            key, "--jobs", str(args.jobs)]  # fmt: skip
                    m = run_measured(argv, cwd=root, env=env, log_dir=logs, name=tag)
                    inner = json.loads(m.stdout_tail.strip().splitlines()[-1])
                    entry = {"wall": inner["seconds"], "process_wall": m.wall, "cpu": m.cpu,
                             "files": inner["files"]}  # fmt: skip
                else:
                    m = run_measured(tpulint_argv(args.jobs, folder), cwd=root,
                                     env=versions[what]["env"], log_dir=logs, name=tag)  # fmt: skip
                    if m.returncode != 0:
                        raise SystemExit(f"cold: {tag} failed: {m.stderr_tail}")
                    parsed = PARSED.search(m.stderr_tail)
                    entry = {"wall": m.wall, "cpu": m.cpu,
                             "libcst_parsed": int(parsed.group(1)) if parsed else None}  # fmt: skip
                entry["load"] = m.load_before
                runs[scope].setdefault(what, []).append(entry)
                # Each measurement as it is made: a long run stopped early keeps what it has.
                print(f"measured {tag}: {json.dumps(entry)}", file=sys.stderr, flush=True)
            print(f"repetition {rep + 1}/{args.runs}: {scope} done", file=sys.stderr)

    serial: dict[str, dict[str, object]] = {s: {} for s in scopes}
    if not args.skip_serial:
        for scope, folder in folders.items():
            for name, version in versions.items():
                done = subprocess.run(
                    [sys.executable, str(BENCH / "serial_part.py"), folder, "--jobs",
                     str(args.jobs)], cwd=root, env=version["env"], capture_output=True,
                    text=True, check=True,
                )  # fmt: skip
                serial[scope][name] = json.loads(done.stdout.strip().splitlines()[-1])

    report = summarise(runs, serial, versions, args)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "cold.json").write_text(
        json.dumps({"runs": runs, "serial": serial, "report": report}, indent=1), encoding="utf-8"
    )
    return 0


def summarise(runs, serial, versions, args) -> dict[str, object]:  # type: ignore[no-untyped-def]
    report: dict[str, object] = {}
    print(f"\n{args.runs} repetition(s), {args.jobs} processes, load {load_average():.1f} now")
    print("| scope | version | files parsed with libcst | wall s | CPU s | wall / floor | "
          "CPU / floor | load |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for scope, by_tool in runs.items():
        floor = by_tool["floor"]
        fw = statistics.median(e["wall"] for e in floor)
        fc = statistics.median(e["cpu"] for e in floor)
        loads = [e["load"] for e in floor]
        print(f"| {scope} | floor (every file read) | {floor[0]['files']} | {fw:.2f} | "
              f"{fc:.2f} | 1.00x | 1.00x | {min(loads):.1f}-{max(loads):.1f} |")  # fmt: skip
        old = by_tool.get("old-floor")
        if old:
            ow = statistics.median(e["wall"] / f["wall"] for e, f in zip(old, floor, strict=True))
            oc = statistics.median(e["cpu"] / f["cpu"] for e, f in zip(old, floor, strict=True))
            report[f"{scope}/old-floor"] = {"wall_ratio": ow, "cpu_ratio": oc}
            old_loads = [e["load"] for e in old]
            print(f"| {scope} | old floor (text-prefiltered files) | {old[0]['files']} | "
                  f"{statistics.median(e['wall'] for e in old):.2f} | "
                  f"{statistics.median(e['cpu'] for e in old):.2f} | {ow:.2f}x | {oc:.2f}x | "
                  f"{min(old_loads):.1f}-{max(old_loads):.1f} |")  # fmt: skip
        for name in versions:
            entries = by_tool[name]
            wall_ratio = statistics.median(
                e["wall"] / f["wall"] for e, f in zip(entries, floor, strict=True)
            )
            cpu_ratio = statistics.median(
                e["cpu"] / f["cpu"] for e, f in zip(entries, floor, strict=True)
            )
            loads = [e["load"] for e in entries]
            parsed = entries[0]["libcst_parsed"]
            report[f"{scope}/{name}"] = {"wall_ratio": wall_ratio, "cpu_ratio": cpu_ratio}
            print(
                f"| {scope} | {name} | {parsed if parsed is not None else '-'} | "
                f"{statistics.median(e['wall'] for e in entries):.2f} | "
                f"{statistics.median(e['cpu'] for e in entries):.2f} | {wall_ratio:.2f}x | "
                f"{cpu_ratio:.2f}x | {min(loads):.1f}-{max(loads):.1f} |"
            )
    if any(serial.values()):
        print(
            "\n| scope | version | serial part: wall s | parent CPU s (before / between / "
            "after the pools) | T(1) CPU s | projected T(16) s | floor T(16) s | ratio |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for scope, by_version in serial.items():
            floor_cpu = statistics.median(e["cpu"] for e in runs[scope]["floor"])
            for name, part in by_version.items():
                s = part["serial"].get("thread", part["serial"]["cpu"])
                t1 = statistics.median(e["cpu"] for e in runs[scope][name])
                t16 = s + (t1 - s) / 16
                f16 = floor_cpu / 16
                report[f"{scope}/{name}/projection"] = {"S": s, "T1": t1, "T16": t16, "F16": f16}
                print(
                    f"| {scope} | {name} | {part['serial']['wall']:.2f} | {s:.2f} "
                    f"({part['before_pool']['cpu']:.2f} / {part['between_pools']['cpu']:.2f} / "
                    f"{part['after_pool']['cpu']:.2f}) | {t1:.1f} | {t16:.2f} | {f16:.2f} | "
                    f"{t16 / f16:.2f}x |"
                )
    return report


if __name__ == "__main__":
    sys.exit(main())
