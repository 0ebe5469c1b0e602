"""What verify puts in place of the Trainer's logger, checkpointing, early stopping and
progress bar: stand-ins that keep everything user code relies on, and write nothing.

A module may write to its logger (`self.logger.log_metrics(...)`,
`self.logger.experiment.add_image(...)`), read `trainer.log_dir`, the checkpoint callback's
`best_model_path`, the early-stopping callback's state or the progress bar. Turning those off
(`logger=False`, `enable_checkpointing=False`) breaks such a module under verify although it
trains fine on a TPU, and hides what they cost there. So:

* the logger is a Lightning `Logger` that accepts every call and discards it: Lightning logs
  to it as to the user's (every `log_every_n_steps`, turning logged tensors into numbers, as
  the real run does); its experiment object takes any method call; its directories are in
  verify's run directory;
* checkpoint callbacks (Lightning's default one, or the user's) run their whole logic (the
  monitored metric must exist, the best score is tracked) but the file is not written;
* early-stopping callbacks run their check (and its cross-core decision) but do not stop the
  run verify judges;
* the progress bar is a silent one: `trainer.progress_bar_callback` exists, nothing prints.

Child process only: imports the Lightning package of the module (flavour.py).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from tpulint.runtime.events import EventLog
from tpulint.runtime.trainer_args import STAND_IN_LOGGER, STAND_IN_PROGRESS_BAR


class _Sink:
    """An experiment object (TensorBoard's SummaryWriter, a W&B run, a Neptune run...) that
    takes any attribute, call or item and does nothing."""

    def __init__(self, directory: str) -> None:
        self._directory = directory

    def __getattr__(self, name: str) -> Any:
        if name in ("log_dir", "logdir", "dir", "save_dir", "root_dir"):
            return self._directory
        if name.startswith("__"):
            raise AttributeError(name)
        return _Sink(self._directory)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return None

    def __getitem__(self, key: Any) -> _Sink:
        return _Sink(self._directory)

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def __bool__(self) -> bool:
        return True


def _registered(cls: type, package: Any) -> type:
    """`cls` as a global of this module, so pickle can name it: Lightning's XLA launcher
    pickles the Trainer, its logger and callbacks into the replica processes, which are
    forked from this one and find the same class here."""
    name = f"{cls.__name__}_{package.distribution}"
    cls.__name__ = cls.__qualname__ = name
    cls.__module__ = __name__
    globals()[name] = cls
    return cls


def make_logger(package: Any, run_dir: str) -> Any:
    """A logger of the module's Lightning package that writes nothing."""
    directory = str(Path(run_dir) / "logs")
    os.makedirs(directory, exist_ok=True)
    name = f"StandInLogger_{package.distribution}"
    cls = globals().get(name) or _registered(_logger_class(package), package)
    return cls(directory)


def _logger_class(package: Any) -> type:
    loggers = package.module("loggers")

    class StandInLogger(loggers.Logger):  # type: ignore[misc, name-defined]
        """verify's logger: accepts everything, writes nothing (runtime/child/stand_ins.py)."""

        def __init__(self, directory: str) -> None:
            super().__init__()
            self._directory = directory
            self._experiment = _Sink(directory)

        @property
        def name(self) -> str:
            return "tpulint"

        @property
        def version(self) -> int:
            return 0

        @property
        def root_dir(self) -> str:
            return self._directory

        @property
        def save_dir(self) -> str:
            return self._directory

        @property
        def log_dir(self) -> str:
            return self._directory

        @property
        def experiment(self) -> Any:
            return self._experiment

        def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
            pass

        def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
            pass

        def log_graph(self, model: Any, input_array: Any = None) -> None:
            pass

        def __getattr__(self, name: str) -> Any:
            # A method of the user's own logger class (log_image, log_table, log_text...).
            if name.startswith("_"):
                raise AttributeError(name)
            return _Sink(self.__dict__.get("_directory", ""))

    return StandInLogger


def make_progress_bar(package: Any) -> Any:
    """A progress bar that exists for user code and prints nothing."""
    name = f"SilentProgressBar_{package.distribution}"
    cls = globals().get(name) or _registered(_progress_bar_class(package), package)
    return cls()


def _progress_bar_class(package: Any) -> type:
    progress = package.module("callbacks.progress.progress_bar")

    class SilentProgressBar(progress.ProgressBar):  # type: ignore[misc, name-defined]
        """verify's progress bar: prints nothing (runtime/child/stand_ins.py)."""

        def __init__(self) -> None:
            super().__init__()
            self._enabled = True

        @property
        def is_enabled(self) -> bool:
            return self._enabled

        def disable(self) -> None:
            self._enabled = False

        def enable(self) -> None:
            self._enabled = True

    return SilentProgressBar


def resolve(used: dict[str, Any], package: Any, run_dir: str) -> dict[str, Any]:
    """The Trainer arguments with the markers replaced by stand-ins of `package`."""
    resolved = dict(used)
    if resolved.get("logger") == STAND_IN_LOGGER:
        resolved["logger"] = make_logger(package, run_dir)
    callbacks = list(resolved.get("callbacks") or [])
    if STAND_IN_PROGRESS_BAR in callbacks:
        callbacks[callbacks.index(STAND_IN_PROGRESS_BAR)] = make_progress_bar(package)
        resolved["callbacks"] = callbacks
    return resolved


_STATE: dict[str, Any] = {}


class CallbackStandIns:
    """A Callback (made a Lightning one by flavour.with_base) that neuters the checkpoint and
    early-stopping callbacks in each replica, at `setup`, when the Trainer's list is final
    (the module's `configure_callbacks()` included). The patched methods are closures that
    pickle cannot carry, so this happens after the Trainer reached the replica process."""

    def __init__(self, package: Any, log: EventLog) -> None:
        _STATE.update(package=package, log=log, instance=self)

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return _instance, ()

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        neuter(trainer, _STATE["package"], _STATE["log"])


def _instance() -> CallbackStandIns:
    return _STATE["instance"]


def neuter(trainer: Any, package: Any, log: EventLog) -> None:
    """Checkpoint callbacks keep their logic but write no file; early stopping keeps its check
    but does not stop the run. Applied to every such callback once the Trainer has its final
    list (Lightning adds the module's `configure_callbacks()` at the start of fit)."""
    checkpoint = package.module("callbacks").ModelCheckpoint
    stopping = package.module("callbacks").EarlyStopping
    for callback in trainer.callbacks:
        if isinstance(callback, checkpoint) and not getattr(callback, "_tpulint", False):
            _no_files(callback, log)
        elif isinstance(callback, stopping) and not getattr(callback, "_tpulint", False):
            _no_stopping(callback, log)


def _no_files(callback: Any, log: EventLog) -> None:
    def _save_checkpoint(trainer: Any, filepath: str) -> None:
        # What ModelCheckpoint._save_checkpoint records, without trainer.save_checkpoint:
        # writing every parameter to disk is not part of what verify judges.
        callback._last_global_step_saved = trainer.global_step
        callback._last_checkpoint_saved = filepath
        if trainer.is_global_zero:
            log.write("checkpoint_skipped", path=filepath, step=trainer.global_step)

    callback._save_checkpoint = _save_checkpoint
    callback._tpulint = True


def _no_stopping(callback: Any, log: EventLog) -> None:
    original = callback._run_early_stopping_check

    @functools.wraps(original)
    def _run_early_stopping_check(trainer: Any) -> None:
        before = trainer.should_stop
        original(trainer)
        if trainer.should_stop and not before:
            trainer.should_stop = False  # the run's length is verify's
            if trainer.is_global_zero:
                log.write("early_stop_ignored", epoch=trainer.current_epoch)

    callback._run_early_stopping_check = _run_early_stopping_check
    callback._tpulint = True
