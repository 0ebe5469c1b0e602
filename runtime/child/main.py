"""The child process: `python -m tpulint.runtime.child RUN_DIR/spec.json` (see __main__.py).

The parent starts it with the PJRT environment already set (environment.child_environment),
so torch_xla initializes for the right backend. It imports the user's target, installs the
recorders (and, when emulating on CPU, the XLA:CPU workarounds), and trains through
Lightning's Trainer with the XLA strategy. Everything it learns goes to the event log; its
exit status only says how it ended:

    0  training finished            2  could not run (VerifyError: bad target, ...)
    3  training raised              (killed by a signal: an XLA abort or the watchdog)
"""

from __future__ import annotations

import faulthandler
import inspect
import os
import signal
import sys
import threading
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tpulint.runtime.child import graphs, lifetime
from tpulint.runtime.child.flavour import Flavour
from tpulint.runtime.errors import VerifyError
from tpulint.runtime.events import EventLog
from tpulint.runtime.frames import CodeFilter
from tpulint.runtime.spec import (
    EXIT_COULD_NOT_RUN,
    EXIT_FINISHED,
    EXIT_TRAINING_RAISED,
    RunSpec,
)


def _install_recorders(spec: RunSpec, log: EventLog, code: CodeFilter) -> Any:
    """What records the run and does not depend on which Lightning package the module uses:
    installed before the user's code is imported (see run())."""
    from tpulint.runtime.child import cores, distributed, optimizers
    from tpulint.runtime.child.graphs import DEBUG_FILE, GraphLog
    from tpulint.runtime.child.ledger import Ledger
    from tpulint.runtime.child.recorder import StepRecorder
    from tpulint.runtime.child.sampling import SamplerRecorder
    from tpulint.runtime.child.tracing import record_collectives

    ledger = Ledger(log, code)
    graph_log = GraphLog(Path(spec.run_dir) / DEBUG_FILE)
    recorder = StepRecorder(
        ledger,
        log,
        spec.barrier_timeout,
        graph_log,
        warmup=spec.warmup,
        max_extra_epochs=spec.max_extra_epochs,
        extend_until=spec.extend_until,
        finish_after="test" if spec.test else "train",
        done_marker=Path(spec.run_dir) / DONE_MARKER,
    )
    if spec.device == "CPU":
        from tpulint.runtime.child.xla_cpu import CpuDataParallel

        replicas = int(os.environ.get("CPU_NUM_DEVICES", "1"))
        workarounds = CpuDataParallel(replicas, spec.barrier_timeout, ledger.marker_compiles)
        workarounds.install()
        recorder.on_abort.append(workarounds.abort)
    record_collectives(ledger)
    optimizers.install(log, code)
    distributed.install(log, code)
    cores.install(ledger)
    SamplerRecorder(ledger, spec.run_dir).install()
    return recorder


def _install_package_hooks(recorder: Any, package: Flavour) -> None:
    """What hooks into the Lightning package the module is written against."""
    from tpulint.runtime.child import cores

    _report_replica_failures(recorder, package)
    cores.track_evaluation_stage(recorder.ledger, package)


def _report_replica_failures(recorder: Any, package: Flavour) -> None:
    """Lightning re-raises a replica's exception in the main process only after every replica
    thread has ended, and the others may be blocked in a barrier or a collective by then.
    Hook the per-replica entry point to record the exception at once and release the rest."""
    _XLALauncher = package.XLALauncher

    original = _XLALauncher._wrapping_function

    def _wrapping_function(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        except BaseException as exc:
            recorder.replica_failed(exc, end_process=True)
            raise

    _XLALauncher._wrapping_function = _wrapping_function

    original_collect = _XLALauncher._collect_rank_zero_results

    def _collect_rank_zero_results(self: Any, trainer: Any, results: Any) -> Any:
        recorder.loop_done(trainer)  # may end this replica process: the run is recorded
        return original_collect(self, trainer, results)

    _XLALauncher._collect_rank_zero_results = _collect_rank_zero_results


def _check_emulation(spec: RunSpec) -> None:
    if spec.device == "CPU":
        from tpulint.runtime.child.xla_cpu import check_torch_xla_version

        check_torch_xla_version()


def _versions(spec: RunSpec, package: Flavour) -> dict[str, str]:
    import lightning
    import torch
    import torch_xla

    versions = {
        "torch": torch.__version__,
        "torch_xla": torch_xla.__version__,
        "lightning": lightning.__version__,
    }
    if package.distribution != "lightning":
        versions[package.distribution] = package.version
    return versions


def _trainer(
    spec: RunSpec, recorder: Any, loaded: Any, log: EventLog, extra: Sequence[Any] = ()
) -> Any:
    """The Trainer: the user's arguments (their --config `trainer:` section, then
    --trainer-args) with verify's own settings on top (trainer_args.own_settings, where they
    are listed with their reasons); what was overridden goes to the event log for the report."""
    from tpulint.runtime.child import stand_ins
    from tpulint.runtime.child.accelerator import trainer_accelerator
    from tpulint.runtime.child.flavour import with_base
    from tpulint.runtime.trainer_args import Override, check_names, merge, own_settings

    package: Flavour = loaded.package
    trainer_class = package.Trainer
    check_names(
        spec.trainer_args,
        list(inspect.signature(trainer_class.__init__).parameters)[1:],
        "--trainer-args",
        package.trainer_name(),
    )
    requested = {**loaded.trainer_args, **spec.trainer_args}
    own = own_settings(
        accelerator=trainer_accelerator(spec.device, package),
        cores=spec.cores,
        epochs=spec.epochs,
        steps=spec.steps,
        run_dir=spec.run_dir,
        emulated=spec.device == "CPU",
        eval_steps=spec.val_steps,
    )
    extra = [*extra, stand_ins.CallbackStandIns(package, log)]
    callbacks = [with_base(c, package.Callback) for c in (recorder, *extra)]
    args = merge(requested, own, callbacks)
    args.overridden += [
        Override(f"fit({name})", value, None, reason)
        for name, (value, reason) in loaded.ignored_fit_args.items()
    ]
    shown = args.to_json()
    # As written in the config (class_path and init_args), where that says more than a class.
    shown["requested"].update(
        {k: v for k, v in loaded.shown_trainer_args.items() if k not in spec.trainer_args}
    )
    log.write(
        "trainer",
        package=package.distribution,
        **{"class": f"{trainer_class.__module__}.{trainer_class.__qualname__}"},
        **shown,
    )
    try:
        trainer = trainer_class(**stand_ins.resolve(args.used, package, spec.run_dir))
    except (Exception, SystemExit) as exc:
        asked = ", ".join(sorted(requested)) or "none"
        raise VerifyError(
            f"{package.trainer_name()}(...) refused the arguments ({type(exc).__name__}:"
            f" {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}); yours: {asked}",
            traceback.format_exc(),
        ) from None
    if loaded.optimizer_patch and getattr(trainer.strategy, "launcher", None) is not None:
        # The launcher pickles the module into the replica processes (see cli_config.py).
        log.write("config_optimizer_lost", **loaded.optimizer_patch)
    return trainer


# Left by the replica process when it ended the run itself (recorder.StepRecorder._finish).
DONE_MARKER = "finished"


def _check_test_loop(loaded: Any) -> None:
    is_overridden = loaded.package.module("utilities.model_helpers").is_overridden
    name = type(loaded.module).__name__
    if not is_overridden("test_step", loaded.module):
        raise VerifyError(f"--test: {name} defines no test_step()")
    holders = [h for h in (loaded.datamodule, loaded.module) if h is not None]
    if not any(is_overridden("test_dataloader", h) for h in holders):
        raise VerifyError(f"--test: no test_dataloader() in {name} or its DataModule")


def _early_roots(spec: RunSpec) -> list[str]:
    """The user's code as far as it is known before importing the target: the working
    directory (unless it is / or the home directory) and a target file's package."""
    from tpulint.runtime.child.targets import module_name_for_file

    roots = []
    if spec.cwd and os.path.realpath(spec.cwd) not in (
        "/",
        os.path.realpath(os.path.expanduser("~")),
    ):
        roots.append(spec.cwd)
    for ref in (spec.target, spec.datamodule):
        if ref is not None and ref.kind == "file":
            name, search_root = module_name_for_file(ref.location)
            roots.append(
                os.path.join(search_root, name.split(".")[0])
                if "." in name
                else os.path.dirname(ref.location)
            )
    return roots


def run(spec: RunSpec, log: EventLog) -> int:
    from tpulint.runtime.child import targets

    _check_emulation(spec)
    extra = []
    if spec.equivalence:  # --compare: seeded before the module is built
        from tpulint.runtime.child import equivalence

        extra.append(equivalence.install(spec.equivalence, log))
    from tpulint.runtime.child import memory

    extra.append(memory.install(log, spec.device, spec.run_dir))
    # Before the user's code is imported and built: a DataLoader made in a module's __init__
    # is recorded with its line, and a module that binds torch_xla's functions at import
    # gets the recorded ones. The target's package joins the user's code once it is known.
    code = CodeFilter(_early_roots(spec))
    recorder = _install_recorders(spec, log, code)
    from tpulint.runtime.child.optimizers import OptimizerCheck

    extra.append(OptimizerCheck())
    loaded = targets.load(spec)
    code.add_roots(loaded.roots)
    _install_package_hooks(recorder, loaded.package)
    if spec.test:
        _check_test_loop(loaded)
    log.write("target", description=loaded.description, roots=loaded.roots, files=loaded.files)
    versions = _versions(spec, loaded.package)
    trainer = _trainer(spec, recorder, loaded, log, extra)
    log.write(
        "fit_start",
        versions=versions,
        cores=trainer.num_devices,
        strategy=type(trainer.strategy).__name__,
    )
    try:
        trainer.fit(loaded.module, datamodule=loaded.datamodule)
        if spec.test:
            log.write("test_start")
            trainer.test(loaded.module, datamodule=loaded.datamodule, verbose=False)
    except BaseException as exc:
        if (Path(spec.run_dir) / DONE_MARKER).exists():
            return EXIT_FINISHED  # the replica process ended itself once all was recorded
        if spec.cores == 1:  # no launcher: the replica ran in this thread
            recorder.replica_failed(exc)
        log.write(
            "fit_error",
            type=type(exc).__name__,
            message=str(exc).strip()[:500],
            traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        )
        return EXIT_TRAINING_RAISED
    log.write("finished")
    return EXIT_FINISHED


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    spec = RunSpec.load(Path(args[0]))
    parent_fd = lifetime.parent_fd_from_environment()
    if parent_fd is not None:
        # First, while this process has one thread and no torch: the watcher is a fork of it.
        lifetime.watch_parent(parent_fd)
    log = EventLog(spec.run_dir)
    # Before torch_xla is imported: it reads its debug settings once.
    graphs.configure(spec.run_dir)
    # On a hang the parent sends SIGUSR1 before killing: every thread of every process of the
    # run (the forked replica process inherits the handler) dumps its stack to stderr, which
    # is how a hang gets a user file:line.
    faulthandler.register(signal.SIGUSR1, all_threads=True, chain=False)
    # A replica that dies of a signal (SIGSEGV in a native extension, SIGABRT in XLA) dumps
    # every thread's stack too: the judge finds the core, the step and the user's line in it.
    faulthandler.enable(all_threads=True)
    log.write("child_start", pid=os.getpid(), thread=threading.get_ident())
    try:
        return run(spec, log)
    except VerifyError as exc:
        log.write("error", message=exc.message, detail=exc.detail)
        return EXIT_COULD_NOT_RUN
