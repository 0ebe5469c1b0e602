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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tpulint.runtime.child.flavour import Flavour, flavour
from tpulint.runtime.errors import VerifyError
from tpulint.runtime.events import EventLog
from tpulint.runtime.spec import (
    EXIT_COULD_NOT_RUN,
    EXIT_FINISHED,
    EXIT_TRAINING_RAISED,
    RunSpec,
)


def _install_recorders(
    spec: RunSpec, log: EventLog, roots: list[str], package: Flavour | None = None
) -> Any:
    from tpulint.runtime.child.ledger import Ledger
    from tpulint.runtime.child.recorder import StepRecorder
    from tpulint.runtime.child.sampling import SamplerRecorder
    from tpulint.runtime.child.tracing import record_collectives
    from tpulint.runtime.frames import CodeFilter

    ledger = Ledger(log, CodeFilter(roots))
    recorder = StepRecorder(ledger, log, spec.barrier_timeout)
    if spec.device == "CPU":
        from tpulint.runtime.child.xla_cpu import CpuDataParallel

        replicas = int(os.environ.get("CPU_NUM_DEVICES", "1"))
        workarounds = CpuDataParallel(replicas, spec.barrier_timeout, ledger.marker_compiles)
        workarounds.install()
        recorder.on_abort.append(workarounds.abort)
    record_collectives(ledger)
    SamplerRecorder(ledger, spec.run_dir).install()
    _report_replica_failures(recorder, package or flavour(None))
    return recorder


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


def _versions(spec: RunSpec, package: Flavour) -> dict[str, str]:
    import lightning
    import torch
    import torch_xla

    if spec.device == "CPU":
        from tpulint.runtime.child.xla_cpu import check_torch_xla_version

        check_torch_xla_version()
    versions = {
        "torch": torch.__version__,
        "torch_xla": torch_xla.__version__,
        "lightning": lightning.__version__,
    }
    if package.distribution != "lightning":
        versions[package.distribution] = package.version
    return versions


def _trainer(spec: RunSpec, recorder: Any, loaded: Any, log: EventLog) -> Any:
    """The Trainer: the user's arguments (their --config `trainer:` section, then
    --trainer-args) with verify's own settings on top (trainer_args.own_settings, where they
    are listed with their reasons); what was overridden goes to the event log for the report."""
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
    )
    args = merge(requested, own, [with_base(recorder, package.Callback)])
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
        trainer = trainer_class(**args.used)
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


def run(spec: RunSpec, log: EventLog) -> int:
    from tpulint.runtime.child import targets

    loaded = targets.load(spec)
    log.write("target", description=loaded.description, roots=loaded.roots, files=loaded.files)
    versions = _versions(spec, loaded.package)
    recorder = _install_recorders(spec, log, loaded.roots, loaded.package)
    trainer = _trainer(spec, recorder, loaded, log)
    log.write(
        "fit_start",
        versions=versions,
        cores=trainer.num_devices,
        strategy=type(trainer.strategy).__name__,
    )
    try:
        trainer.fit(loaded.module, datamodule=loaded.datamodule)
    except BaseException as exc:
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


def _parent_death_signal() -> Callable[[], None]:
    """A function that has the kernel SIGKILL the calling process when its parent dies
    (Linux prctl PR_SET_PDEATHSIG), so no replica process outlives an interrupted or killed
    verify. Resolved once here: the at-fork hook that calls it runs in a freshly forked copy of
    a multi-threaded process, where loading a library could deadlock."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: the parent's process-group kill remains
        return lambda: None
    pr_set_pdeathsig = 1
    return lambda: prctl(pr_set_pdeathsig, signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    spec = RunSpec.load(Path(args[0]))
    log = EventLog(spec.run_dir)
    die_with_parent = _parent_death_signal()
    die_with_parent()
    # Lightning forks the replica process (and a multiprocessing manager) from here.
    os.register_at_fork(after_in_child=die_with_parent)
    # On a hang the parent sends SIGUSR1 before killing: every thread of every process of the
    # run (the forked replica process inherits the handler) dumps its stack to stderr, which
    # is how a hang gets a user file:line.
    faulthandler.register(signal.SIGUSR1, all_threads=True, chain=False)
    log.write("child_start", pid=os.getpid(), thread=threading.get_ident())
    try:
        return run(spec, log)
    except VerifyError as exc:
        log.write("error", message=exc.message, detail=exc.detail)
        return EXIT_COULD_NOT_RUN
