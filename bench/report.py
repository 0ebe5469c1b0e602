"""docs/benchmarks.md and the plot, generated from a results file. Needs matplotlib (the
benchmark runs it in its tools venv).

    python bench/report.py bench/results/latest.json docs/benchmarks.md docs/benchmarks.png

Every number in the page comes from the results file: nothing here is typed in by hand.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Runs = list[dict[str, Any]]

TPULINT_COLD = "tpulint.cold"
ROWS = (  # (key in the results, label)
    ("tpulint.cold", "tpulint, cold (`--no-cache`)"),
    ("tpulint.fresh", "tpulint, cold, writing a fresh cache"),
    ("tpulint.warm", "tpulint, warm (nothing changed)"),
    ("tpulint.changed", "tpulint, one file changed (warm cache)"),
    ("torchfix", "TorchFix `--select ALL` (no cache: cold = warm = one changed)"),
    ("fixit", "Fixit `lint`, default rules (no cache: cold = warm = one changed)"),
    ("floor.1", "floor: libcst parse of every file tpulint reads, 1 process"),
    ("floor.2", "floor: libcst parse of every file tpulint reads, 2 processes"),
    ("floor.prefiltered.2", "old floor: libcst parse of the text-prefiltered files, 2 processes"),
    ("floor15.2", "floor with TorchFix's libcst, TorchFix's files, 2 processes"),
)
PLOT_ROWS = ("tpulint.cold", "tpulint.warm", "tpulint.changed", "torchfix", "fixit", "floor.2")
PLOT_LABELS = {
    "tpulint.cold": "tpulint cold",
    "tpulint.warm": "tpulint warm",
    "tpulint.changed": "tpulint 1 changed",
    "torchfix": "TorchFix",
    "fixit": "Fixit",
    "floor.2": "libcst floor (2 procs)",
}


# --- numbers -----------------------------------------------------------------------------


def is_floor(key: str) -> bool:
    return key.startswith("floor")


def seconds(run: dict[str, Any], key: str) -> float:
    """Wall seconds of a run; for the floor, the time measured inside it (no start-up)."""
    if is_floor(key) and isinstance(run.get("extra"), dict) and "seconds" in run["extra"]:
        return float(run["extra"]["seconds"])
    return float(run["wall"])


def values(runs: Runs, key: str, field: str) -> list[float]:
    if field == "wall":
        return [seconds(r, key) for r in runs]
    return [float(r[field]) for r in runs]


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def paired_ratios(a: Runs, b: Runs, key_a: str, key_b: str, field: str) -> list[float]:
    """a[i] / b[i] for the repetitions both have (measured back to back)."""
    n = min(len(a), len(b))
    va, vb = values(a[:n], key_a, field), values(b[:n], key_b, field)
    return [x / y for x, y in zip(va, vb, strict=True) if y > 0]


def fmt_s(x: float) -> str:
    if x != x:  # NaN
        return "n/a"
    return f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 100 else f"{x:.0f}"


def fmt_spread(xs: Sequence[float]) -> str:
    if not xs:
        return "n/a"
    if len(xs) == 1:
        return fmt_s(xs[0])
    return f"{fmt_s(median(xs))} ({fmt_s(min(xs))}-{fmt_s(max(xs))})"


def fmt_ratio(xs: Sequence[float]) -> str:
    return "n/a" if not xs else f"{median(xs):.2f}x"


# --- tables ------------------------------------------------------------------------------


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def scope_table(scope: dict[str, Runs]) -> str:
    cold = scope.get(TPULINT_COLD, [])
    rows = []
    for key, label in ROWS:
        runs = scope.get(key)
        if not runs:
            continue
        rows.append(
            [
                label,
                fmt_spread(values(runs, key, "wall")),
                fmt_spread(values(runs, key, "cpu")),
                fmt_ratio(paired_ratios(runs, cold, key, TPULINT_COLD, "wall")),
                fmt_ratio(paired_ratios(runs, cold, key, TPULINT_COLD, "cpu")),
                f"{median(values(runs, key, 'peak_rss_mib')):.0f}",
                f"{median(values(runs, key, 'peak_pss_mib')):.0f}",
                str(len(runs)),
            ]
        )
    header = [
        "tool / scenario",
        "wall s, median (min-max)",
        "CPU s, median (min-max)",
        "wall / tpulint cold",
        "CPU / tpulint cold",
        "peak RSS MiB (tree sum)",
        "peak PSS MiB",
        "runs",
    ]
    return table(header, rows)


def target_rows(name: str, scope: dict[str, Runs], startup: dict[str, Runs]) -> list[list[str]]:
    cold = scope.get(TPULINT_COLD, [])
    rows = []

    def add(
        label: str, want: str, ratios: dict[str, list[float]], ok: Callable[[float], bool]
    ) -> None:
        cells = [fmt_ratio(ratios[f]) for f in ("wall", "cpu")]
        verdicts = {f: ok(median(r)) for f, r in ratios.items() if r}
        met = (
            "n/a"
            if not verdicts
            else "yes"
            if all(verdicts.values())
            else (
                "wall only" if verdicts.get("wall") else "CPU only" if verdicts.get("cpu") else "no"
            )
        )
        rows.append([name, label, want, *cells, met])

    for peer, title in (("torchfix", "TorchFix"), ("fixit", "Fixit")):
        if scope.get(peer):
            add(
                f"{title} / tpulint cold",
                ">= 3",
                {
                    f: paired_ratios(scope[peer], cold, peer, TPULINT_COLD, f)
                    for f in ("wall", "cpu")
                },
                lambda x: x >= 3,
            )
    if scope.get("tpulint.warm"):
        add(
            "tpulint cold / warm",
            ">= 20",
            {
                f: paired_ratios(cold, scope["tpulint.warm"], TPULINT_COLD, "tpulint.warm", f)
                for f in ("wall", "cpu")
            },
            lambda x: x >= 20,
        )
    if scope.get("floor.2"):
        add(
            "tpulint cold / floor (2 processes)",
            "<= 1.5",
            {
                f: paired_ratios(cold, scope["floor.2"], TPULINT_COLD, "floor.2", f)
                for f in ("wall", "cpu")
            },
            lambda x: x <= 1.5,
        )
        adjusted = floor_ratio_without_startup(cold, scope["floor.2"], startup)
        if adjusted:
            rows.append(
                [
                    name,
                    "(tpulint cold - its start-up) / floor (2 processes)",
                    "<= 1.5",
                    fmt_ratio(adjusted),
                    "",
                    "yes" if median(adjusted) <= 1.5 else "no",
                ]
            )
    return rows


def floor_ratio_without_startup(cold: Runs, floor: Runs, startup: dict[str, Runs]) -> list[float]:
    boot = startup.get("tpulint")
    if not boot:
        return []
    start = median([float(r["wall"]) for r in boot])
    n = min(len(cold), len(floor))
    return [
        (float(c["wall"]) - start) / seconds(f, "floor.2")
        for c, f in zip(cold[:n], floor[:n], strict=True)
    ]


def startup_table(startup: dict[str, Runs]) -> str:
    rows = [
        [
            name,
            fmt_spread(values(runs, name, "wall")),
            fmt_spread(values(runs, name, "cpu")),
            f"{median(values(runs, name, 'peak_rss_mib')):.0f}",
        ]
        for name, runs in startup.items()
    ]
    return table(["tool", "wall s", "CPU s", "peak RSS MiB"], rows)


def files_table(files: dict[str, Any]) -> str:
    rows = []
    for scope, info in files.items():
        stats = info["stats"]
        for key, label in (
            ("discovered", "all .py files (tpulint walks them, Fixit lints all)"),
            ("tpulint_parses", "files a rule's text prefilter matches (the old floor's)"),
            ("torchfix_parses", 'files TorchFix parses (a line contains "torch")'),
        ):
            s = stats[key]
            mib = f"{s['bytes'] / 2**20:.1f}"
            rows.append([scope, label, f"{s['files']:,}", f"{s['lines']:,}", mib])
    return table(["scope", "file set", "files", "lines", "MiB"], rows)


def versions_table(meta: dict[str, Any]) -> str:
    rows = []
    for venv, found in meta["versions"].items():
        rows.append([venv, ", ".join(f"{k} {v}" for k, v in found.items() if v)])
    return table(["environment", "versions"], rows)


# --- verify and profile -------------------------------------------------------------------


def verify_section(verify: dict[str, Runs], meta: dict[str, Any]) -> str:
    if not verify:
        return "Not measured in this run (`--skip-verify`)."
    ours, bare = verify.get("verify", []), verify.get("bare", [])
    noval = verify.get("verify_noval", [])
    v = meta.get("verify", {})
    rows = [
        [
            "`tpulint verify` (Lightning Trainer, recording, validation)",
            fmt_spread(values(ours, "v", "wall")),
            fmt_spread(values(ours, "v", "cpu")),
            f"{median(values(ours, 'v', 'peak_rss_mib')):.0f}",
        ],
        [
            "`tpulint verify`, the module without validation_step",
            fmt_spread(values(noval, "n", "wall")),
            fmt_spread(values(noval, "n", "cpu")),
            f"{median(values(noval, 'n', 'peak_rss_mib')):.0f}",
        ]
        if noval
        else None,
        [
            "bare torch_xla loop (no Lightning, no recording)",
            fmt_spread(values(bare, "b", "wall")),
            fmt_spread(values(bare, "b", "cpu")),
            f"{median(values(bare, 'b', 'peak_rss_mib')):.0f}",
        ],
    ]
    rows = [row for row in rows if row]
    ratio = paired_ratios(ours, bare, "v", "b", "wall")
    validation = paired_ratios(ours, noval, "v", "n", "wall") if noval else None
    train = extra_values(bare, "train_seconds")
    inner = extra_values(ours, "run_seconds")
    verdicts = sorted({str(r.get("extra", {}).get("verdict")) for r in ours})
    return "\n".join(
        [
            f"{v.get('cores', 8)} emulated cores (PJRT CPU), {v.get('steps')} steps per epoch, "
            f"{v.get('epochs')} epochs, `examples/tpu_ready/model.py:LitClassifier`.",
            "",
            table(["command", "wall s", "CPU s", "peak RSS MiB"], rows),
            "",
            f"- verify / bare loop, wall time: **{fmt_ratio(ratio)}** (per-repetition median).",
            *(
                [
                    f"- verify / verify without validation: **{fmt_ratio(validation)}**: what"
                    " running and judging the validation loop adds."
                ]
                if validation is not None
                else []
            ),
            f"- Inside them: verify's child reports {fmt_spread(inner)} s of run time "
            f"(Trainer set-up and training); the bare loop spends {fmt_spread(train)} s from "
            "spawn to the end of training, after importing torch and torch_xla.",
            f"- verify's verdict on this module: {', '.join(verdicts)}.",
        ]
    )


def extra_values(runs: Runs, name: str) -> list[float]:
    return [float(r["extra"][name]) for r in runs if (r.get("extra") or {}).get(name)]


def profile_section(profile: dict[str, Any]) -> str:
    if not profile:
        return "Not profiled in this run (`--skip-profile`)."
    phases = profile["phases"]
    total = phases["total_cpu"]
    timers = phases["timers"]
    grouped = group_timers(timers)
    rows = [[name, f"{secs:.1f}", f"{100 * secs / total:.0f}%"] for name, secs in grouped]
    rules = sorted(
        (
            (k.removeprefix("handler: rule "), v["seconds"], v["calls"])
            for k, v in timers.items()
            if k.startswith("handler: rule ")
        ),
        key=lambda item: -item[1],
    )
    rule_rows = [
        [name, f"{secs:.2f}", f"{calls:,}", f"{100 * secs / total:.1f}%"]
        for name, secs, calls in rules[:10]
    ]
    parts = [
        f"Scope: {profile.get('scope')}; {phases['files_checked']:,} files, one process "
        f"(`jobs=1`), CPU time {total:.1f} s (wall {phases['total_wall']:.1f} s).",
        "",
        table(["phase (self time)", "CPU s", "share"], rows),
        "",
        "Slowest rules (handler CPU time, including the timing wrapper's own cost):",
        "",
        table(["rule", "CPU s", "handler calls", "share"], rule_rows),
    ]
    spy = profile.get("py_spy", {}).get("samples")
    if spy:
        parts += ["", "py-spy samples of the real CLI run (2 worker processes), by process:", ""]
        parts.append(pyspy_table(spy))
    return "\n".join(parts)


PHASE_GROUPS = (  # (group, timer name prefixes)
    ("libcst parsing", ("libcst parse_module",)),
    (
        "semantic pre-pass (walk + its collector + the rest)",
        ("semantic pre-pass", "handler: context _Collector"),
    ),
    ("main walk: traversal", ("walk traversal",)),
    ("main walk: FileContext handlers", ("handler: context FileContext",)),
    ("main walk: rule handlers", ("handler: rule ",)),
    ("positions and fix edits", ("positions", "fix positions", "fix edits")),
    ("suppressions (comments, TPL001)", ("suppression comments", "suppressions and TPL001")),
    ("reading, discovery, project index", ("reading files", "discovery", "project index scan")),
    (
        "engine: rule prefilter, set-up, diagnostics",
        ("rule prefilter", "engine: other", "FileContext construction"),
    ),
)


def group_timers(timers: dict[str, dict[str, float]]) -> list[tuple[str, float]]:
    used: set[str] = set()
    out = []
    for group, prefixes in PHASE_GROUPS:
        names = [k for k in timers if k not in used and k.startswith(prefixes)]
        used.update(names)
        out.append((group, sum(timers[k]["seconds"] for k in names)))
    rest = sum(v["seconds"] for k, v in timers.items() if k not in used)
    if rest:
        out.append(("other handlers", rest))
    return out


def pyspy_table(samples: dict[str, dict[str, int]]) -> str:
    total = sum(sum(c.values()) for c in samples.values()) or 1
    rows = []
    for role, counts in samples.items():
        for category, count in counts.items():
            rows.append([role, category, f"{count:,}", f"{100 * count / total:.0f}%"])
    return table(["process", "category", "samples", "share"], rows)


# --- the plot ----------------------------------------------------------------------------


def plot(results: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scopes = results["scopes"]
    fig, axes = plt.subplots(1, len(scopes), figsize=(6.5 * len(scopes), 4.2), squeeze=False)
    for ax, (name, scope) in zip(axes[0], scopes.items(), strict=True):
        keys = [k for k in PLOT_ROWS if scope.get(k)]
        walls = [values(scope[k], k, "wall") for k in keys]
        cpus = [values(scope[k], k, "cpu") for k in keys]
        ys = range(len(keys))
        ax.barh(
            [y + 0.2 for y in ys],
            [median(w) for w in walls],
            height=0.4,
            label="wall",
            xerr=_spread(walls),
            color=["#1f77b4" if k.startswith("tpulint") else "#999999" for k in keys],
        )
        ax.barh(
            [y - 0.2 for y in ys],
            [median(c) for c in cpus],
            height=0.4,
            label="CPU",
            xerr=_spread(cpus),
            color="none",
            edgecolor="#444444",
            hatch="//",
        )
        ax.set_yticks(list(ys), [PLOT_LABELS[k] for k in keys])
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("seconds (log scale; median, bars = min-max)")
        ax.set_title(f"{name}: {results['files'][name]['stats']['discovered']['files']:,} files")
        ax.legend(loc="lower right", fontsize=8)
    fig.suptitle(
        f"Time per tool ({results['meta']['started'][:10]}, "
        f"{results['meta']['machine']['cpu_count']} CPUs)"
    )
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def _spread(groups: list[list[float]]) -> list[list[float]]:
    lows = [median(g) - min(g) for g in groups]
    highs = [max(g) - median(g) for g in groups]
    return [lows, highs]


# --- the cache check ----------------------------------------------------------------------


def cache_check(logs: Path, results: dict[str, Any]) -> dict[str, list[int]]:
    """Per scope: [repetitions whose cached runs printed exactly the cold run's findings,
    repetitions compared]. Read from the commands' saved output next to the results."""
    out = {}
    for name, scope in results["scopes"].items():
        same = compared = 0
        for rep in range(len(scope.get(TPULINT_COLD, []))):
            cold = logs / f"{name}.r{rep}.tpulint.cold.out"
            others = [logs / f"{name}.r{rep}.tpulint.{k}.out" for k in ("fresh", "warm", "changed")]
            if not cold.is_file() or not all(p.is_file() for p in others):
                continue
            compared += 1
            same += all(p.read_bytes() == cold.read_bytes() for p in others)
        out[name] = [same, compared]
    return out


def cache_sentence(check: dict[str, list[int]]) -> str:
    parts = [
        f"{name}: {same} of {compared}" for name, (same, compared) in check.items() if compared
    ]
    if not parts:
        return ""
    return (
        "Cache correctness: the fresh-cache, warm and one-changed runs printed exactly the "
        "cold run's findings in " + "; ".join(parts) + " repetitions."
    )


# --- the page ----------------------------------------------------------------------------


def missed_sentence(rows: list[list[str]]) -> str:
    missed = [
        f"{scope}: {target} (wanted {want}; wall {wall}, CPU {cpu or 'n/a'})"
        for scope, target, want, wall, cpu, met in rows
        if met != "yes"
    ]
    if not missed:
        return "All targets met, on wall time and on CPU time."
    return (
        "Missed on at least one measure: " + "; ".join(missed) + ". Where the time goes: "
        "[the profile](#where-a-cold-tpulint-run-spends-its-time)."
    )


def page(results: dict[str, Any], plot_name: str) -> str:
    meta = results["meta"]
    startup = results.get("startup", {})
    target_table = []
    for name, scope in results["scopes"].items():
        target_table += target_rows(name, scope, startup)
    sections = [
        "# Benchmarks",
        "",
        f"<!-- Generated by `{meta['command']}` from bench/results/latest.json; "
        "regenerate, do not edit. -->",
        "",
        f"Measured on {meta['started']} in {meta['duration_seconds'] / 60:.0f} minutes: "
        f"{meta['machine']['cpu_count']} x {meta['machine']['cpu_model']}, "
        f"{meta['machine']['memory_gib']} GiB, {meta['machine']['platform']}; "
        f"commit `{meta['git']['commit'][:10]}` (local changes: {meta['git']['dirty']}). "
        f"{meta['runs']} repetition(s) of tpulint and the floor, {meta['peer_runs']} of the peers; "
        f"load average {meta['load_start']:.1f} at the start and {meta['load_end']:.1f} at the end"
        f"{', measured commands at niceness ' + str(meta['nice']) if meta['nice'] else ''}. "
        "How it is measured, and the caveats: [bench/README.md](../bench/README.md).",
        "",
        "## Targets",
        "",
        "Ratios are per-repetition (tools measured back to back, under the same load), then the "
        "median. Wall time is what a user waits; CPU time (user + system of the whole process "
        "tree) is what the tool consumes. On a shared machine CPU time is less sensitive to "
        "other load than wall time, but not immune (the min-max columns show the spread).",
        "",
        table(["scope", "target", "wanted", "wall", "CPU", "met"], target_table),
        "",
        missed_sentence(target_table),
        "",
        f"![time per tool]({plot_name})",
        "",
    ]
    for name, scope in results["scopes"].items():
        sections += [f"## {name}", "", scope_table(scope), ""]
    sections += [
        cache_sentence(results.get("cache_check", {})),
        "",
        "The floor's time is measured inside its process (reading + parsing, after `import "
        "libcst`); its CPU time is the whole process's. Peak memory sums the RSS of every "
        "process of the tool's tree (sampled every 20 ms); PSS shares pages that forked workers "
        "share.",
        "",
        "## Start-up (each tool on a folder with one trivial file)",
        "",
        startup_table(startup),
        "",
        "## Files each tool looks at",
        "",
        files_table(results["files"]),
        "",
        "Parallelism (all on this machine's CPUs): tpulint, one forked worker per CPU; TorchFix, "
        "libcst's codemod pool (`multiprocessing.Pool`, `--jobs` defaults to the CPU count); "
        "Fixit, trailrunner's `ProcessPoolExecutor` (spawned, one per CPU).",
        "",
        "## `tpulint verify` overhead",
        "",
        verify_section(results.get("verify", {}), meta),
        "",
        "## Where a cold tpulint run spends its time",
        "",
        profile_section(results.get("profile", {})),
        "",
        "## Versions",
        "",
        versions_table(meta),
        "",
    ]
    return "\n".join(sections)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    source = Path(argv[0])
    results = json.loads(source.read_text(encoding="utf-8"))
    results["cache_check"] = cache_check(source.parent / "logs", results)
    md, png = Path(argv[1]), Path(argv[2])
    plot(results, png)
    md.write_text(page(results, png.name), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
