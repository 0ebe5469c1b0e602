"""The Python API: `verify(target, ...)` and `compare(target, ...)`.

Both run in the calling process without importing torch, torch_xla or lightning: the training
runs in a child process (runner.py) and only its event log comes back.
"""

from __future__ import annotations

import difflib
import importlib.machinery
import importlib.util
import os
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tpulint.runtime.environment import (
    EMULATED_DEFAULT_CORES,
    INSTALL_HINT,
    Backend,
    check_installation,
    detect_backend,
)
from tpulint.runtime.errors import VerifyError
from tpulint.runtime.judge.analysis import Settings, analyze, base_report, error_report
from tpulint.runtime.judge.attribution import RuleIndex
from tpulint.runtime.judge.crash import emulation_fault
from tpulint.runtime.judge.report import CompareReport, VerifyReport
from tpulint.runtime.judge.run_inputs import record_run_inputs
from tpulint.runtime.libtpu import lock_status, remove_if_left_by
from tpulint.runtime.pods import refuse_pod
from tpulint.runtime.runner import run_child
from tpulint.runtime.spec import RunSpec, TargetRef, parse_json_object
from tpulint.runtime.topology import Topology, emulated_topology, tpu_topology
from tpulint.runtime.tpu_hbm import memory_limit
from tpulint.runtime.trainer_args import check_names, trainer_parameters

DEFAULT_STEPS = 32
DEFAULT_EPOCHS = 3
DEFAULT_WARMUP = 2
DEFAULT_TIMEOUT = 600.0
MAX_EMULATED_CORES = 64


def default_batch_multiple(cwd: str | None = None) -> int:
    """`[tool.tpulint] batch-multiple` of the project, else 8."""
    return configured_batch_multiple(cwd) or 8


def configured_batch_multiple(cwd: str | None = None) -> int | None:
    """`[tool.tpulint] batch-multiple` of the project when it sets one (not the default 8);
    None: the judge picks the tile of the dtype the TPU computes in (8 rows, 16 for bf16)."""
    try:
        from tpulint.config.settings import load_config

        value = load_config(start=Path(cwd) if cwd else None).batch_multiple
    except Exception:  # no or broken config
        return None
    return value if value != 8 else None


def _barrier_timeout(timeout: float) -> float:
    # Long enough for a large graph to compile while the other replicas wait, short enough
    # that a replica stuck out of step is reported before the watchdog fires.
    return max(10.0, min(timeout * 0.25, 300.0))


def check_numbers(
    *,
    cores: int | None = None,
    steps: int | None = None,
    warmup: int = 0,
    epochs: int = 1,
    timeout: float = 1.0,
    batch_multiple: int | None = None,
) -> None:
    """The numeric options, each a one-line VerifyError when out of range."""
    for option, value, least in (
        ("--cores", cores, 1),
        ("--steps", steps, 1),
        ("--warmup", warmup, 0),
        ("--epochs", epochs, 1),
        ("--batch-multiple", batch_multiple, 1),
    ):
        if value is not None and value < least:
            raise VerifyError(f"{option} must be at least {least}, got {value}")
    if not timeout > 0:  # also NaN
        raise VerifyError(f"--timeout must be positive, got {timeout:g}")


def config_files(configs: list[str | os.PathLike[str]] | None, cwd: str) -> list[str]:
    """The LightningCLI `--config` files as absolute paths, each an existing readable file."""
    found = []
    for given in configs or []:
        path = Path(given).expanduser()
        path = Path(os.path.normpath(path if path.is_absolute() else Path(cwd) / path))
        if path.is_dir():
            raise VerifyError(f"--config {given}: is a folder, not a config file")
        if not path.is_file():
            raise VerifyError(f"--config {given}: no such file")
        if not os.access(path, os.R_OK):
            raise VerifyError(f"--config {given}: not readable")
        found.append(str(path))
    return found


def _build_spec(
    target: str | None,
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
    emulate: str | None = None,
    datamodule_args: dict[str, Any] | str | None = None,
    trainer_args: dict[str, Any] | str | None = None,
    configs: list[str | os.PathLike[str]] | None = None,
    overrides: dict[str, str] | None = None,
    barrier_timeout: float | None = None,
    warmup: int = DEFAULT_WARMUP,
    test: bool = False,
    equivalence: dict[str, Any] | None = None,
    topology: Topology | None = None,
    script: str | None = None,
    script_args: list[str] | None = None,
) -> RunSpec:
    args = parse_json_object(init_args, "--init-args")
    module_args = parse_json_object(datamodule_args, "--datamodule-args", '{"batch_size": 64}')
    trainer = parse_json_object(trainer_args, "--trainer-args", '{"precision": "bf16-true"}')
    files = config_files(configs, cwd)
    topology = topology or resolve_topology(backend, emulate, cores)
    cores = topology.check_cores(cores)
    script_path = _script_path(script, cwd, target, files, datamodule) if script else None
    if target is None and not files and script_path is None:
        raise VerifyError(
            "no target: give TARGET (`package.module:Class` or `path/to/file.py:Class`), or a"
            " --config whose `model:` names its class_path"
        )
    if module_args and not (datamodule or files):
        raise VerifyError("--datamodule-args needs --datamodule (or a --config with `data:`)")
    refs = [TargetRef.parse(target, cwd=cwd)] if target else []
    dm_ref = TargetRef.parse(datamodule, cwd=cwd) if datamodule else None
    for ref in [*refs, *([dm_ref] if dm_ref else [])]:
        _check_top_level_module(ref, cwd)
    return RunSpec(
        target=refs[0] if refs else None,
        datamodule=dm_ref,
        init_args=args,
        datamodule_args=module_args,
        trainer_args=trainer,
        configs=files,
        device=backend.device,
        cores=cores,
        layout=[topology.processes, topology.devices_per_process]
        if topology.emulated and topology.processes > 1
        else None,
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
        equivalence=equivalence,
        script=script_path,
        script_args=list(script_args or []),
    )


def _script_path(
    script: str, cwd: str, target: str | None, configs: list[str], datamodule: str | None
) -> str:
    """--script as an absolute path to an existing Python file, alone as the target."""
    if target or configs or datamodule:
        given = "TARGET" if target else ("--config" if configs else "--datamodule")
        raise VerifyError(
            f"--script runs your script as it is; {given} cannot be combined with it (your"
            " script builds the module and its data)"
        )
    path = Path(script).expanduser()
    path = Path(os.path.normpath(path if path.is_absolute() else Path(cwd) / path))
    if path.is_dir():
        raise VerifyError(f"--script {script}: is a folder, not a Python script")
    if not path.is_file():
        raise VerifyError(f"--script {script}: no such file")
    return str(path)


def resolve_topology(backend: Backend, emulate: str | None, cores: int | None) -> Topology:
    """The cores verify would train on, refused in one line where verify cannot run: a
    multi-host slice (pods.py says why and what to run instead), an emulated layout asked for
    on a real TPU, more emulated cores than a CPU can hold."""
    if not backend.emulated:
        if emulate:
            raise VerifyError(
                f"--emulate {emulate}: this machine has TPU chips; verify trains on them"
                " (--emulate is for machines without a TPU)"
            )
        topology = tpu_topology()
        refuse_pod(topology)
        return topology
    topology = emulated_topology(emulate, cores, EMULATED_DEFAULT_CORES)
    if topology.local_devices > MAX_EMULATED_CORES:
        raise VerifyError(
            f"--cores {topology.local_devices}: emulation supports at most"
            f" {MAX_EMULATED_CORES} cores"
        )
    return topology


def topology_fields(topology: Topology) -> dict[str, Any]:
    """The report's `backend` fields about where the cores are."""
    return {
        "tpu_type": topology.tpu_type,
        "layout": {
            "processes": topology.processes,
            "devices_per_process": topology.devices_per_process,
        },
        "hosts": topology.hosts,
        "allowed_cores": topology.allowed_cores,
    }


def _check_libtpu_lock(backend: Backend) -> bool:
    """On a TPU VM: refuse to start behind a lock file no process holds (libtpu would refuse,
    less clearly); returns whether a lock file was there before the run."""
    if backend.emulated:
        return False
    status = lock_status()
    if status.stale:
        raise VerifyError(status.line())
    return status.exists


def check_config_support() -> None:
    """--config needs LightningCLI's parser; looked up without importing it."""
    if importlib.util.find_spec("jsonargparse") is None:
        raise VerifyError(
            "--config needs jsonargparse (LightningCLI's parser), which is not installed:"
            f" {INSTALL_HINT}"
        )


def check_trainer_args(names: list[str]) -> None:
    """--trainer-args names against the installed Lightning Trainer's signature, read from its
    source here in the parent (nothing is imported). The child checks again against the
    Trainer it actually uses (pytorch_lightning's, for modules written against it)."""
    if not names:
        return
    known = trainer_parameters("lightning")
    if known is not None:
        check_names(names, known, "--trainer-args")


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
    target: str | None,
    *,
    cores: int | None = None,
    steps: int | None = DEFAULT_STEPS,
    warmup: int = DEFAULT_WARMUP,
    epochs: int = DEFAULT_EPOCHS,
    datamodule: str | None = None,
    init_args: dict[str, Any] | str | None = None,
    datamodule_args: dict[str, Any] | str | None = None,
    trainer_args: dict[str, Any] | str | None = None,
    config: list[str | os.PathLike[str]] | str | os.PathLike[str] | None = None,
    batch_multiple: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    cwd: str | os.PathLike[str] | None = None,
    keep_run_dir: bool = False,
    barrier_timeout: float | None = None,
    test: bool = False,
    emulate: str | None = None,
    script: str | os.PathLike[str] | None = None,
    script_args: list[str] | None = None,
    tpu_type: str | None = None,
    hbm: str | int | None = None,
    _overrides: dict[str, str] | None = None,
    _aliases: dict[str, str] | None = None,
    _equivalence: dict[str, Any] | None = None,
    _events: list[dict[str, Any]] | None = None,
) -> VerifyReport:
    """Train `target` ("pkg.module:Class" or "path/to/file.py:Class", or a zero-argument
    factory) for `epochs` epochs of at most `steps` steps on `cores` XLA cores (all TPU cores
    on a TPU VM, 8 emulated ones elsewhere) and judge sharding, compile stability, transfers
    and batch geometry. Never raises for a problem with the target: the report says it.

    With `test`, the test loop runs after training and is judged too.

    Memory: every run estimates the training step's peak per core; `tpu_type` ("v5e",
    "v4-8", ...) or `hbm` (bytes, or a size such as "16GiB") makes it a verdict against that
    limit (judge/check_memory.py).

    `timeout` bounds the whole run; `barrier_timeout` (default: a quarter of it, 10 to 300
    seconds; 3 times the slowest step if that is longer) is how long no core may record
    anything before verify looks at the cores' stacks for a hang.

    `emulate` ("v4-8", "v5e-8", ...) reproduces that TPU VM's processes on emulated cores;
    `script` (with `target=None`) runs the user's own training script with `script_args`.

    The user's real run: `trainer_args` (keyword arguments for the Trainer; verify's own
    settings win where they conflict, and the report says so), `datamodule_args`, and
    `config`, LightningCLI config files (a path or a list, merged in order as
    `main.py fit --config A --config B` would); with a config whose `model:` has a class_path,
    `target` may be None."""
    started = time.perf_counter()
    directory = os.path.abspath(cwd or os.getcwd())
    configs = [config] if isinstance(config, (str, os.PathLike)) else list(config or [])
    settings = Settings(
        warmup=warmup,
        batch_multiple=batch_multiple or 8,
        timeout=timeout,
        aliases=dict(_aliases or {}),
    )
    run_dir = tempfile.mkdtemp(prefix="tpulint-verify-")
    outcome = None
    fault: str | None = None
    spec: RunSpec | None = None
    topology: Topology | None = None
    try:
        backend = detect_backend()
        try:
            check_numbers(
                cores=cores,
                steps=steps,
                warmup=warmup,
                epochs=epochs,
                timeout=timeout,
                batch_multiple=batch_multiple,
            )
            chosen = batch_multiple or configured_batch_multiple(directory)
            settings.batch_multiple = chosen or 8
            settings.batch_multiple_explicit = chosen is not None
            settings.memory_limit = memory_limit(tpu_type, hbm)
            topology = resolve_topology(backend, emulate, cores)
            spec = _build_spec(
                target,
                datamodule=datamodule,
                init_args=init_args,
                datamodule_args=datamodule_args,
                trainer_args=trainer_args,
                configs=configs,
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
                equivalence=_equivalence,
                emulate=emulate,
                topology=topology,
                script=os.fspath(script) if script is not None else None,
                script_args=script_args,
            )
            check_trainer_args(list(spec.trainer_args))
            check_installation(backend)
            lock_existed = _check_libtpu_lock(backend)
            if spec.configs:
                check_config_support()
        except VerifyError as exc:
            if spec is None:  # the options themselves were wrong: report them as given
                spec = RunSpec(
                    TargetRef(target, "module", target, "") if target else None,
                    datamodule=TargetRef(datamodule, "module", datamodule, "")
                    if datamodule
                    else None,
                    init_args=init_args if isinstance(init_args, dict) else {},
                    epochs=epochs,
                    steps=steps,
                    cores=cores,
                )
            report = error_report(base_report(spec, settings, backend), exc.message, exc.detail)
        else:
            try:
                outcome = run_child(spec, backend, timeout)
            finally:
                if not backend.emulated:
                    remove_if_left_by(lock_existed)
            fault = emulation_fault(outcome, spec.run_dir) if backend.emulated else None
            if fault is not None:
                # The emulated runtime crashed, not the module: run it once more in a fresh
                # directory (a second crash is reported as it is), and say so in the report.
                spec = replace(spec, run_dir=os.path.join(run_dir, "again"))
                os.makedirs(spec.run_dir)
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
        if fault is not None:
            report.run["emulation_crash"] = fault
        if topology is not None:
            report.backend.update(topology_fields(topology))
        record_run_inputs(report, spec, configs, outcome.events if outcome else [])
        if _events is not None and outcome is not None:
            _events.extend(outcome.events)  # --compare's equivalence check reads them
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


def _fix_files(
    files: list[str], out_dir: Path, cwd: str, ignore: list[str] | None = None
) -> _FixedSources:
    """`tpulint fix --unsafe-fixes` on each file (without the rules in `ignore`), written to
    copies in `out_dir` (the user's files are never touched)."""
    from tpulint.config.settings import Config, ConfigError, load_config
    from tpulint.engine.source import fix_source
    from tpulint.runner.paths import project_model

    configs: dict[str, Config] = {}
    for path in files:
        try:
            configs[path] = load_config(start=Path(path).parent)
        except ConfigError:
            configs[path] = Config()
        if ignore:
            configs[path] = configs[path].with_cli(ignore=ignore)
    # The whole-project model `tpulint fix` uses (one per project root): a helper in another
    # module is hot through its callers there, so the copies get the fixes `fix` would make.
    projects: dict[Path, Any] = {}

    def config_of(path: str) -> Config:
        if path not in configs:
            try:
                configs[path] = load_config(start=Path(path).parent)
            except ConfigError:
                configs[path] = Config()
            if ignore:
                configs[path] = configs[path].with_cli(ignore=ignore)
        return configs[path]

    def project_of(path: str) -> Any:
        config = config_of(path)
        if config.root not in projects:
            same_root = [f for f in files if config_of(f).root == config.root] or [path]
            projects[config.root] = project_model(same_root, config)
        return projects[config.root]

    sources: dict[str, str] = {}
    results: dict[str, Any] = {}
    for path in files:
        sources[path] = Path(path).read_text(encoding="utf-8")
        results[path] = fix_source(
            sources[path], path, config_of(path), unsafe=True, project=project_of(path)
        )
        if results[path].error:
            shown = _shown(path, cwd)
            raise VerifyError(f"--compare: tpulint fix failed on {shown}: {results[path].error}")
    _fix_groups(files, sources, results, config_of, project_of)
    fixed = _FixedSources()
    for index, (path, result) in enumerate(results.items()):
        source = sources[path]
        shown = _shown(path, cwd)
        fixed.fixes += [
            {
                "path": shown,
                "code": d.code,
                "line": d.start.line,
                "end_line": d.end.line,
                "message": d.message,
                "applicability": d.fix.applicability.value if d.fix else None,
                "file": path,
            }
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


def _fix_groups(
    files: list[str],
    sources: dict[str, str],
    results: dict[str, Any],
    config_of: Any,
    project_of: Any,
) -> None:
    """Fixes that span files (a collected value's readers in a callback or a metrics module)
    are applied whole: every file they touch, in the target's files or elsewhere in its
    project, is fixed again with their edits (tpulint.runner.groups); `sources` and
    `results` gain the files outside the target's."""
    from tpulint.engine.source import fix_source
    from tpulint.runner import groups

    found = groups.collect(
        (path, sources[path], d)
        for path, result in results.items()
        for d in result.remaining
        if d.fixable(True)
    )
    if not found:
        return
    by_real = {groups.real(path): path for path in files}

    def text_of(real: str) -> str | None:
        path = by_real.get(real, real)
        if path not in sources:
            try:
                sources[path] = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
        return sources[path]

    accepted, _ = groups.accept(found.values(), text_of)

    def fix_file(real: str, edits: list[Any]) -> Any:
        path = by_real.get(real, real)
        return fix_source(
            sources[path],
            path,
            config_of(path),
            unsafe=True,
            project=project_of(path),
            extra_edits=edits,
        )

    refixed, _, _ = groups.refix(accepted, fix_file)
    for real, result in refixed.items():
        results[by_real.get(real, real)] = result


def compare(
    target: str | None,
    *,
    datamodule: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    seed: int = 0,
    **options: Any,
) -> CompareReport:
    """Verify `target` as written and as `tpulint fix --unsafe-fixes` would leave its file (and
    the DataModule's), one run after the other, so the two can be compared; both runs are
    seeded alike and record the loss, gradient norms and final parameters, and the report
    says whether the fixed module computes the same training (`equivalence`).

    Fixes that change the training by design (batch size, drop_last, precision: listed in
    judge/equivalence.CHANGES_BY_DESIGN) make the batches differ; the equivalence is then
    checked on a third run with the other rewrites only."""
    from tpulint.runtime.judge.equivalence import CHANGES_BY_DESIGN, judge

    directory = os.path.abspath(cwd or os.getcwd())
    fixed_dir = Path(tempfile.mkdtemp(prefix="tpulint-fixed-"))
    try:
        try:
            if not target:
                raise VerifyError(
                    "--compare needs TARGET: the file of the module is what `tpulint fix` rewrites"
                )
            refs = [TargetRef.parse(target, cwd=directory)]
            if datamodule:
                refs.append(TargetRef.parse(datamodule, cwd=directory))
            files = _target_files(refs, directory)
            fixed = _fix_files(files, fixed_dir / "all", directory)
            by_design = [f for f in fixed.fixes if f["code"] in CHANGES_BY_DESIGN]
            compared = fixed
            if by_design:
                codes = sorted({f["code"] for f in by_design})
                compared = _fix_files(files, fixed_dir / "compared", directory, ignore=codes)
        except VerifyError as exc:
            requested = RunSpec(TargetRef(target, "module", target, "") if target else None)
            report = error_report(base_report(requested, Settings(), None), exc.message)
            return CompareReport(report, report, changed=False)

        def record(role: str) -> dict[str, Any]:
            spec = {"seed": seed, "dir": str(fixed_dir / "equivalence"), "role": role}
            if role == "original":
                spec["trace"] = files  # which rewritten lines the training runs
            return spec

        original_events: list[dict[str, Any]] = []
        original = verify(
            target,
            datamodule=datamodule,
            cwd=directory,
            _equivalence=record("original"),
            _events=original_events,
            **options,
        )
        if not fixed.overrides or original.error:
            return CompareReport(
                original, original, changed=False, fixes=fixed.fixes, remaining=fixed.remaining
            )
        fixed_events: list[dict[str, Any]] = []
        after = verify(
            target,
            datamodule=datamodule,
            cwd=directory,
            _overrides=fixed.overrides,
            _aliases=fixed.aliases,
            _equivalence=record("fixed"),
            _events=fixed_events,
            **options,
        )
        equivalence = None
        if compared is not fixed and compared.overrides and not after.error:
            fixed_events = []
            verify(
                target,
                datamodule=datamodule,
                cwd=directory,
                _overrides=compared.overrides,
                _aliases=compared.aliases,
                _equivalence=record("fixed"),
                _events=fixed_events,
                **options,
            )
        if compared.overrides and not after.error:
            arguments: dict[str, Any] = {
                "rewrites": compared.fixes,
                "excluded": [f for f in fixed.fixes if f["code"] in CHANGES_BY_DESIGN],
                "precision": after.trainer.get("used", {}).get("precision")
                if isinstance(after.trainer, dict)
                else None,
            }
            equivalence = judge(original_events, fixed_events, **arguments)
            if equivalence is not None and equivalence.needs_baseline:
                # A state value differs: is it the same in two runs as written?
                baseline: list[dict[str, Any]] = []
                verify(
                    target,
                    datamodule=datamodule,
                    cwd=directory,
                    _equivalence=record("baseline"),
                    _events=baseline,
                    **options,
                )
                equivalence = judge(original_events, fixed_events, baseline=baseline, **arguments)
        return CompareReport(
            original,
            after,
            changed=True,
            fixes=fixed.fixes,
            remaining=fixed.remaining,
            diffs=fixed.diffs,
            equivalence=equivalence,
        )
    finally:
        shutil.rmtree(fixed_dir, ignore_errors=True)
