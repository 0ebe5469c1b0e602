"""`tpulint verify --script train.py [-- ARGS]`: the user's own training script, run as
`python train.py ARGS` would run it (its `__main__`, its argv, its own Trainer, LightningCLI
or argparse), on the cores, with verify's limits and recording attached.

Every Trainer the script builds (directly, or LightningCLI's) gets the script's arguments with
verify's own settings on top, as a module target's does (trainer_args.own_settings: the
cores, the run's length, stand-ins for the logger, checkpoints and progress bar that write
nothing, verify's recorder among the callbacks), and the run is recorded and judged as a
module target's is. The script's `fit` is the run:
verify reads the module and DataModule it is given (the user's code roots, the report's
classes). Child process only: imports lightning.
"""

from __future__ import annotations

import functools
import os
import runpy
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any

from tpulint.runtime.child.flavour import FLAVOURS, Flavour, with_base
from tpulint.runtime.errors import VerifyError
from tpulint.runtime.events import EventLog
from tpulint.runtime.frames import CodeFilter
from tpulint.runtime.spec import EXIT_FINISHED, EXIT_TRAINING_RAISED, RunSpec


@dataclass
class _Script:
    spec: RunSpec
    log: EventLog
    recorder: Any
    code: CodeFilter
    extra: list[Any]
    hooks: Any  # main._install_package_hooks
    trainers: int = 0
    fitted: bool = False
    hooked: set[str] = field(default_factory=set)


def _display(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _usage_error(exc: SystemExit) -> str | None:
    """What the script's argument parser (argparse's, or a subclass such as LightningCLI's
    jsonargparse) printed before exiting: `ArgumentParser.error(message)` writes it to stderr,
    which the one-line error would otherwise lose."""
    import argparse

    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        parser = frame.f_locals.get("self")
        message = frame.f_locals.get("message")
        if (
            frame.f_code.co_name == "error"
            and isinstance(parser, argparse.ArgumentParser)
            and isinstance(message, str)
        ):
            return f"{parser.prog}: error: {message.strip().splitlines()[0]}"
        tb = tb.tb_next
    return None


def _patch(package: Flavour, state: _Script) -> None:
    """Give every Trainer of `package` verify's settings, and note what it fits."""
    from tpulint.runtime.child import stand_ins
    from tpulint.runtime.child.accelerator import trainer_accelerator
    from tpulint.runtime.trainer_args import merge, own_settings

    trainer_class = package.Trainer
    original_init = trainer_class.__init__
    original_fit = trainer_class.fit
    spec = state.spec

    @functools.wraps(original_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        requested = {**kwargs, **spec.trainer_args}
        own = own_settings(
            accelerator=trainer_accelerator(spec.device, package),
            cores=spec.cores,
            epochs=spec.epochs,
            steps=spec.steps,
            run_dir=spec.run_dir,
            emulated=spec.device == "CPU",
            eval_steps=spec.val_steps,
        )
        extra = [*state.extra, stand_ins.CallbackStandIns(package, state.log)]
        callbacks = [with_base(c, package.Callback) for c in (state.recorder, *extra)]
        merged = merge(requested, own, callbacks)
        state.log.write(
            "trainer",
            package=package.distribution,
            **{"class": f"{trainer_class.__module__}.{trainer_class.__qualname__}"},
            **merged.to_json(),
        )
        if package.distribution not in state.hooked:
            state.hooked.add(package.distribution)
            state.hooks(state.recorder, package, spec.run_dir)
        state.trainers += 1
        original_init(self, *args, **stand_ins.resolve(merged.used, package, spec.run_dir))

    @functools.wraps(original_fit)
    def fit(self: Any, model: Any, *args: Any, **kwargs: Any) -> Any:
        if not state.fitted:
            state.fitted = True
            _note_target(state, package, model, kwargs.get("datamodule"), self)
        if kwargs.get("ckpt_path") is not None:
            kwargs["ckpt_path"] = None  # verify trains from the initial weights
        return original_fit(self, model, *args, **kwargs)

    trainer_class.__init__ = __init__
    trainer_class.fit = fit


def _note_target(
    state: _Script, package: Flavour, model: Any, datamodule: Any, trainer: Any
) -> None:
    from tpulint.runtime.child.main import versions_of
    from tpulint.runtime.child.targets import roots_for

    files, roots = [], []
    for built in (model, datamodule):
        source = sys.modules.get(type(built).__module__) if built is not None else None
        if source is not None:
            path, extra = roots_for(source)
            if path:
                files.append(path)
                roots += extra
    state.code.add_roots(roots)
    name = f"{type(model).__module__}.{type(model).__qualname__}"
    state.log.write(
        "target",
        description={
            "class": name,
            "datamodule": (
                f"{type(datamodule).__module__}.{type(datamodule).__qualname__}"
                if datamodule is not None
                else None
            ),
            "files": files,
            "package": package.distribution,
            "script": state.spec.script,
        },
        roots=state.code.roots,
        files=files,
    )
    state.log.write(
        "fit_start",
        versions=versions_of(package),
        cores=trainer.num_devices,
        strategy=type(trainer.strategy).__name__,
    )


def run_script(
    spec: RunSpec, log: EventLog, recorder: Any, code: CodeFilter, extra: list[Any], hooks: Any
) -> int:
    script = spec.script
    assert script is not None
    directory = os.path.dirname(script)
    code.add_roots([directory])
    state = _Script(spec, log, recorder, code, extra, hooks)
    for package in FLAVOURS.values():
        try:
            package.module()
        except ImportError:
            continue
        _patch(package, state)
    sys.argv = [script, *spec.script_args]
    if directory not in sys.path:
        sys.path.insert(0, directory)  # as `python train.py` would
    shown = _display(script)
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0) and not state.fitted:
            usage = _usage_error(exc)
            raise VerifyError(
                f"{shown} exited with status {exc.code} before training"
                + (f" ({exc.code})" if isinstance(exc.code, str) else "")
                + (f": its argument parser said: {usage}" if usage else ""),
                "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
            ) from None
    except BaseException as exc:
        if not state.fitted:
            from tpulint.runtime.child.targets import user_error

            raise user_error(f"running {shown} failed", exc, code, [script]) from None
        if spec.cores == 1:  # no launcher: the core ran in this thread
            recorder.replica_failed(exc)
        log.write(
            "fit_error",
            type=type(exc).__name__,
            message=str(exc).strip()[:500],
            traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        )
        return EXIT_TRAINING_RAISED
    if not state.trainers:
        raise VerifyError(
            f"{shown} built no Lightning Trainer: verify trains what the script's Trainer fits"
            " (`Trainer(...).fit(model)`, or LightningCLI)"
        )
    if not state.fitted:
        raise VerifyError(f"{shown} built a Trainer but never called fit()")
    log.write("finished")
    return EXIT_FINISHED
