"""The measurements: every tool as a subprocess on the same scratch folder.

For each scope (the whole corpus, one large package) and each repetition, in this order:

    floor.1          libcst.parse_module of every file tpulint reads (discovered), one process
    floor.2          the same with a pool of 2 forked processes (tpulint's parallelism here):
                     the floor the targets use (issue 18: tpulint doing all its work faster
                     than merely parsing every file with libcst)
    floor.prefiltered.2  the old floor: the files a rule's text prefilter matches, 2 processes
    tpulint.cold     tpulint check --no-cache
    tpulint.fresh    tpulint check with an empty cache folder (cold, and writes the cache)
    tpulint.warm     tpulint check again: every file answered from the cache
    tpulint.changed  one file edited, tpulint check with the warm cache (file restored after)
    torchfix         torchfix --select ALL (no cache: its cold time is its warm time)
    fixit            fixit lint (default rules; no cache either)
    floor15.2        (TorchFix's venv, libcst 1.5) the floor over the files TorchFix parses

Running the tools of one repetition back to back makes the per-repetition ratios compare
measurements taken under the same machine load.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from corpus import FileEdit
from measure import Measurement, run_measured

BENCH_DIR = Path(__file__).resolve().parent


@dataclass
class Tools:
    """Where every command lives."""

    project_python: Path
    tpulint: Path
    torchfix: Path | None
    fixit: Path | None
    torchfix_python: Path | None
    floor_script: Path = BENCH_DIR / "floor.py"


@dataclass
class Scope:
    name: str  # "corpus" or a package name
    folder: Path  # inside the scratch root
    selection: Path  # select_files.py output for the folder
    edit_file: Path  # the file edited for "one file changed"


@dataclass
class Settings:
    scratch: Path  # the scratch root (cwd of every tool)
    log_dir: Path
    runs: int
    peer_runs: int
    skip_peers: bool
    nice: int
    timeout: float = 7200.0


Results = dict[str, list[dict[str, object]]]
Progress = Callable[[str], None]


@dataclass
class Runner:
    tools: Tools
    settings: Settings
    progress: Progress
    env: dict[str, str] = field(default_factory=lambda: measured_environment())

    def measure(self, name: str, argv: Sequence[str], log_name: str) -> Measurement:
        result = run_measured(
            [str(a) for a in argv],
            cwd=self.settings.scratch,
            env=self.env,
            log_dir=self.settings.log_dir,
            name=log_name,
            timeout=self.settings.timeout,
            nice=self.settings.nice,
        )
        self.progress(
            f"{log_name}: {result.wall:.2f} s wall, {result.cpu:.2f} s CPU, "
            f"{result.peak_rss_mib:.0f} MiB RSS, rc={result.returncode}, "
            f"load {result.load_before:.1f}"
        )
        return result

    def floor(self, python: Path, scope: Scope, key: str, jobs: int, log_name: str) -> Measurement:
        argv = [python, self.tools.floor_script, scope.selection, key, "--jobs", str(jobs)]
        result = self.measure("floor", argv, log_name)
        result.extra = _last_json_line(result.stdout_tail)
        return result


def measured_environment() -> dict[str, str]:
    """The environment of every measured command: this one, but with Python writing and using
    bytecode caches, as on a user's machine. With PYTHONDONTWRITEBYTECODE set (this machine and
    some CI images set it), an editable install such as the project's recompiles its own
    modules at every start (measured: 0.13 s per run), while pip compiled the peers' modules
    when it installed them."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _last_json_line(text: str) -> dict[str, object]:
    for line in reversed(text.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return {}


def _relative(scope: Scope, scratch: Path) -> str:
    return str(scope.folder.relative_to(scratch))


def tpulint_argv(tools: Tools, folder: str, *, cache: bool) -> list[object]:
    return [tools.tpulint, "check", *([] if cache else ["--no-cache"]), folder]


def run_tpulint(runner: Runner, scope: Scope, rep: int, out: Results) -> None:
    settings = runner.settings
    folder = _relative(scope, settings.scratch)
    tag = f"{scope.name}.r{rep}"
    cold = tpulint_argv(runner.tools, folder, cache=False)
    out.setdefault("tpulint.cold", []).append(
        runner.measure("tpulint", cold, f"{tag}.tpulint.cold").to_json()
    )
    shutil.rmtree(settings.scratch / ".tpulint_cache", ignore_errors=True)
    argv = tpulint_argv(runner.tools, folder, cache=True)
    out.setdefault("tpulint.fresh", []).append(
        runner.measure("tpulint", argv, f"{tag}.tpulint.fresh").to_json()
    )
    out.setdefault("tpulint.warm", []).append(
        runner.measure("tpulint", argv, f"{tag}.tpulint.warm").to_json()
    )
    with FileEdit(scope.edit_file, rep):
        out.setdefault("tpulint.changed", []).append(
            runner.measure("tpulint", argv, f"{tag}.tpulint.changed").to_json()
        )


def run_floor(runner: Runner, scope: Scope, rep: int, out: Results) -> None:
    python = runner.tools.project_python
    for jobs in (1, 2):
        out.setdefault(f"floor.{jobs}", []).append(
            runner.floor(
                python, scope, "discovered", jobs, f"{scope.name}.r{rep}.floor.{jobs}"
            ).to_json()
        )
    # The old floor (files a rule's text prefilter matches), kept as a labelled second figure.
    out.setdefault("floor.prefiltered.2", []).append(
        runner.floor(
            python, scope, "tpulint_parses", 2, f"{scope.name}.r{rep}.floor.prefiltered.2"
        ).to_json()
    )


def run_peers(runner: Runner, scope: Scope, rep: int, out: Results) -> None:
    tools = runner.tools
    folder = _relative(scope, runner.settings.scratch)
    tag = f"{scope.name}.r{rep}"
    if tools.torchfix is not None:
        out.setdefault("torchfix", []).append(
            runner.measure(
                "torchfix", [tools.torchfix, "--select", "ALL", folder], f"{tag}.torchfix"
            ).to_json()
        )
    if tools.fixit is not None:
        out.setdefault("fixit", []).append(
            runner.measure("fixit", [tools.fixit, "lint", folder], f"{tag}.fixit").to_json()
        )
    if tools.torchfix_python is not None:
        out.setdefault("floor15.2", []).append(
            runner.floor(
                tools.torchfix_python, scope, "torchfix_parses", 2, f"{tag}.floor15.2"
            ).to_json()
        )


def run_scope(runner: Runner, scope: Scope) -> Results:
    out: Results = {}
    settings = runner.settings
    for rep in range(settings.runs):
        runner.progress(f"--- {scope.name}: repetition {rep + 1}/{settings.runs}")
        run_floor(runner, scope, rep, out)
        run_tpulint(runner, scope, rep, out)
        if not settings.skip_peers and rep < settings.peer_runs:
            run_peers(runner, scope, rep, out)
    return out


def run_startup(runner: Runner, empty_list: Path) -> Results:
    """Each tool on a folder holding one trivial file: interpreter start-up, imports, CLI."""
    folder = runner.settings.scratch / "startup"
    folder.mkdir(exist_ok=True)
    (folder / "trivial.py").write_text("x = 1\n", encoding="utf-8")
    tools = runner.tools
    commands: dict[str, list[object]] = {
        "tpulint": [tools.tpulint, "check", "--no-cache", "startup"],
        "floor": [tools.project_python, tools.floor_script, empty_list, "-"],
    }
    if not runner.settings.skip_peers:
        if tools.torchfix is not None:
            commands["torchfix"] = [tools.torchfix, "--select", "ALL", "startup"]
        if tools.fixit is not None:
            commands["fixit"] = [tools.fixit, "lint", "startup"]
    # One unmeasured round first: it writes any bytecode caches still missing.
    for name, argv in commands.items():
        runner.measure(name, argv, f"startup.warmup.{name}")
    out: Results = {}
    for rep in range(runner.settings.runs):
        for name, argv in commands.items():
            out.setdefault(name, []).append(
                runner.measure(name, argv, f"startup.r{rep}.{name}").to_json()
            )
    return out


def python_of(script_dir: Path) -> Path:
    return script_dir / "python"


def default_tpulint() -> Path:
    return Path(sys.executable).parent / "tpulint"
