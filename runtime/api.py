"""The Python API: `verify(target, ...)` and `compare(target, ...)`.

Both run in the calling process without importing torch, torch_xla or lightning: the training
runs in a child process (runner.py) and only its event log comes back.
"""

from __future__ import annotations

import difflib
import importlib.machinery
import os
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tpulint.runtime.environment import (
    EMULATED_DEFAULT_CORES,
    Backend,
    check_installation,
    detect_backend,
)
from tpulint.runtime.errors import VerifyError
from tpulint.runtime.judge.analysis import Settings, analyze, base_report, error_report
from tpulint.runtime.judge.attribution import RuleIndex
from tpulint.runtime.judge.report import CompareReport, VerifyReport
from tpulint.runtime.runner import run_child
from tpulint.runtime.spec import RunSpec, TargetRef, parse_init_args

DEFAULT_STEPS = 32
DEFAULT_EPOCHS = 3
DEFAULT_WARMUP = 2
DEFAULT_TIMEOUT = 600.0
MAX_EMULATED_CORES = 64


def default_batch_multiple(cwd: str | None = None) -> int:
    """`[tool.tpulint] batch-multiple` of the project, else 8."""
    try:
        from tpulint.config import load_config

        return load_config(start=Path(cwd) if cwd else None).batch_multiple
    except Exception:  # no or broken config: the TPU's sublane count
        return 8


def _barrier_timeout(timeout: float) -> float:
    # Long enough for a large graph to compile while the other replicas wait, short enough
    # that a replica stuck out of step is reported before the watchdog fires.
    return max(10.0, min(timeout * 0.25, 300.0))


def _build_spec(
    target: str,
    *,
    datamodule: str | None,
    init_args: dict[str, Any] | str | None,
    backend: Backend,
    cores: int | None,
    steps: int | None,
    epochs: int,
    timeout: float,
    cwd: str,
    run_dir: str,
    overrides: dict[str, str] | None = None,
    barrier_timeout: float | None = None,
    warmup: int = DEFAULT_WARMUP,
    test: bool = False,
) -> RunSpec:
    args = (
        parse_init_args(init_args) if isinstance(init_args, str) or init_args is None else init_args
    )
    if not isinstance(args, dict):
        raise VerifyError("init_args must be a dict of keyword arguments")
    if cores is not None and cores < 1:
        raise VerifyError(f"--cores must be at least 1, got {cores}")
    if backend.emulated:
        cores = cores or EMULATED_DEFAULT_CORES
        if cores > MAX_EMULATED_CORES:
            raise VerifyError(
                f"--cores {cores}: emulation supports at most {MAX_EMULATED_CORES} cores"
            )
    if steps is not None and steps < 1:
        raise VerifyError(f"--steps must be at least 1, got {steps}")
    if epochs < 1:
        raise VerifyError(f"--epochs must be at least 1, got {epochs}")
    if timeout <= 0:
        raise VerifyError(f"--timeout must be positive, got {timeout:g}")
    refs = [TargetRef.parse(target, cwd=cwd)]
    if datamodule:
        refs.append(TargetRef.parse(datamodule, cwd=cwd))
    for ref in refs:
        _check_top_level_module(ref, cwd)
    return RunSpec(
        target=refs[0],
        datamodule=refs[1] if datamodule else None,
        init_args=args,
        device=backend.device,
        cores=cores,
        epochs=epochs,
        steps=steps,
        barrier_timeout=barrier_timeout or _barrier_timeout(timeout),
        run_dir=run_dir,
        cwd=cwd,
        overrides=dict(overrides or {}),
        warmup=warmup,
        # Past half the budget no epoch is added (steady.py): the run must end in time.
        extend_until=timeout / 2,
        test=test,
    )


def _check_top_level_module(ref: TargetRef, cwd: str) -> None:
    """Fail fast on a module that is nowhere on the path. Only the top-level name is looked
    up: finding `pkg.sub` would execute `pkg/__init__.py` here, in the parent."""
    if ref.kind != "module":
        return
    top = ref.location.split(".")[0]
    if top in sys.builtin_module_names:
        return
    if importlib.machinery.PathFinder.find_spec(top, [cwd, *sys.path]) is None:
        raise VerifyError(
            f"cannot import `{ref.location}`: no module named `{top}` (run verify from the"
            " directory your code imports from, or install the package)"
        )


def verify(
    target: str,
    *,
    cores: int | None = None,
    steps: int | None = DEFAULT_STEPS,
    warmup: int = DEFAULT_WARMUP,
    epochs: int = DEFAULT_EPOCHS,
    datamodule: str | None = None,
    init_args: dict[str, Any] | str | None = None,
    batch_multiple: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    cwd: str | os.PathLike[str] | None = None,
    keep_run_dir: bool = False,
    barrier_timeout: float | None = None,
    test: bool = False,
    _overrides: dict[str, str] | None = None,
    _aliases: dict[str, str] | None = None,
) -> VerifyReport:
    """Train `target` ("pkg.module:Class" or "path/to/file.py:Class", or a zero-argument
    factory) for `epochs` epochs of at most `steps` steps on `cores` XLA cores (all TPU cores
    on a TPU VM, 8 emulated ones elsewhere) and judge sharding, compile stability, transfers
    and batch geometry. Never raises for a problem with the target: the report says it.

    With `test`, the test loop runs after training and is judged too.

    `timeout` bounds the whole run; `barrier_timeout` (default: a quarter of it, 10 to 300
    seconds) is how long one core may wait for the others at a step boundary before the run
    counts as hung."""
    started = time.perf_counter()
    directory = os.path.abspath(cwd or os.getcwd())
    settings = Settings(
        warmup=max(warmup, 0),
        batch_multiple=batch_multiple or default_batch_multiple(directory),
        timeout=timeout,
        aliases=dict(_aliases or {}),
    )
    run_dir = tempfile.mkdtemp(prefix="tpulint-verify-")
    try:
        backend = detect_backend()
        try:
            spec = _build_spec(
                target,
                datamodule=datamodule,
                init_args=init_args,
                backend=backend,
                cores=cores,
                steps=steps,
                epochs=epochs,
                timeout=timeout,
                cwd=directory,
                run_dir=run_dir,
                overrides=_overrides,
                barrier_timeout=barrier_timeout,
                warmup=settings.warmup,
                test=test,
            )
            check_installation(backend)
        except VerifyError as exc:
            requested = RunSpec(
                TargetRef(target, "module", target, ""), epochs=epochs, steps=steps, cores=cores
            )
            report = error_report(
                base_report(requested, settings, backend), exc.message, exc.detail
            )
        else:
            outcome = run_child(spec, backend, timeout)
            try:
                report = analyze(outcome, spec, settings, backend, RuleIndex())
            except Exception as exc:  # a bug in tpulint must not look like a verdict
                report = error_report(
                    base_report(spec, settings, backend),
                    f"internal error while analysing the run ({type(exc).__name__}: {exc});"
                    " please report it with the output of -v",
                    traceback.format_exc() + "\n" + outcome.log[-5000:],
                )
    finally:
        if keep_run_dir:
            print(f"tpulint: run directory kept: {run_dir}", file=sys.stderr)
        else:
            shutil.rmtree(run_dir, ignore_errors=True)
    report.wall_seconds = time.perf_counter() - started
    return report


def locate_module_file(name: str, cwd: str) -> str | None:
    """The source file of module `name`, found on the path without importing anything (its
    package's __init__ could import torch in this process)."""
    relative = name.replace(".", os.sep)
    for base in [cwd, *sys.path]:
        if not base:
            base = cwd
        for candidate in (relative + ".py", os.path.join(relative, "__init__.py")):
            path = os.path.join(base, candidate)
            if os.path.isfile(path):
                return os.path.abspath(path)
    return None


def _target_files(refs: list[TargetRef], cwd: str) -> list[str]:
    files = []
    for ref in refs:
        path = ref.location if ref.kind == "file" else locate_module_file(ref.location, cwd)
        if path is None:
            raise VerifyError(f"--compare: cannot find the source file of `{ref.raw}`")
        if path not in files:
            files.append(path)
    return files


@dataclass
class _FixedSources:
    overrides: dict[str, str] = field(default_factory=dict)  # original -> fixed copy
    aliases: dict[str, str] = field(default_factory=dict)  # fixed copy -> "model.py (fixed)"
    diffs: dict[str, str] = field(default_factory=dict)  # shown path -> unified diff
    fixes: list[dict[str, Any]] = field(default_factory=list)
    remaining: list[dict[str, Any]] = field(default_factory=list)


def _shown(path: str, cwd: str) -> str:
    relative = os.path.relpath(path, cwd)
    return path if relative.startswith("..") else relative


def _fix_files(files: list[str], out_dir: Path, cwd: str) -> _FixedSources:
    """`tpulint fix --unsafe-fixes` on each file, written to copies in `out_dir` (the user's
    files are never touched)."""
    from tpulint.config import Config, ConfigError, load_config
    from tpulint.engine import fix_source

    fixed = _FixedSources()
    for index, path in enumerate(files):
        try:
            config = load_config(start=Path(path).parent)
        except ConfigError:
            config = Config()
        source = Path(path).read_text(encoding="utf-8")
        result = fix_source(source, path, config, unsafe=True)
        shown = _shown(path, cwd)
        if result.error:
            raise VerifyError(f"--compare: tpulint fix failed on {shown}: {result.error}")
        fixed.fixes += [
            {"path": shown, "code": d.code, "line": d.start.line, "message": d.message}
            for d in result.fixed
        ]
        fixed.remaining += [
            {"path": shown, "code": d.code, "line": d.start.line, "message": d.message}
            for d in result.remaining
            if d.code.startswith("TPU")
        ]
        if result.source != source:
            copy = out_dir / str(index) / os.path.basename(path)
            copy.parent.mkdir(parents=True)
            copy.write_text(result.source, encoding="utf-8")
            fixed.overrides[path] = str(copy)
            fixed.aliases[str(copy)] = f"{shown} (fixed)"
            fixed.diffs[shown] = "".join(
                difflib.unified_diff(
                    source.splitlines(keepends=True),
                    result.source.splitlines(keepends=True),
                    fromfile=shown,
                    tofile=f"{shown} (fixed)",
                )
            )
    return fixed


def compare(
    target: str,
    *,
    datamodule: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    **options: Any,
) -> CompareReport:
    """Verify `target` as written and as `tpulint fix --unsafe-fixes` would leave its file (and
    the DataModule's), one run after the other, so the two can be compared."""
    directory = os.path.abspath(cwd or os.getcwd())
    fixed_dir = Path(tempfile.mkdtemp(prefix="tpulint-fixed-"))
    try:
        try:
            refs = [TargetRef.parse(target, cwd=directory)]
            if datamodule:
                refs.append(TargetRef.parse(datamodule, cwd=directory))
            fixed = _fix_files(_target_files(refs, directory), fixed_dir, directory)
        except VerifyError as exc:
            requested = RunSpec(TargetRef(target, "module", target, ""))
            report = error_report(base_report(requested, Settings(), None), exc.message)
            return CompareReport(report, report, changed=False)
        original = verify(target, datamodule=datamodule, cwd=directory, **options)
        if not fixed.overrides or original.error:
            return CompareReport(
                original, original, changed=False, fixes=fixed.fixes, remaining=fixed.remaining
            )
        after = verify(
            target,
            datamodule=datamodule,
            cwd=directory,
            _overrides=fixed.overrides,
            _aliases=fixed.aliases,
            **options,
        )
        return CompareReport(
            original,
            after,
            changed=True,
            fixes=fixed.fixes,
            remaining=fixed.remaining,
            diffs=fixed.diffs,
        )
    finally:
        shutil.rmtree(fixed_dir, ignore_errors=True)
