"""Build the model, the DataModule and the Trainer's arguments from LightningCLI config files,
as the user's `main.py fit --config A.yaml --config B.yaml` would: with LightningCLI itself
(of the package the module is written against), its `fit` subcommand and its parser.

Nothing is re-implemented: LightningCLI parses and merges the files in order, validates every
key against the classes' signatures, resolves `class_path`/`init_args` (also for callbacks,
loggers, optimizers and LR schedulers in the config), seeds (`seed_everything`) and builds
the model and the DataModule. Only the Trainer is not built: its arguments are captured, so
that verify can merge its own settings (runtime/trainer_args.py) before building it.

How TARGET and the config combine (LightningCLI's two modes):
  - `model:` with a `class_path` (subclass mode): the class named there. With a TARGET, the
    class must be TARGET or a subclass of it; without one, any LightningModule.
  - `model:` with plain keys, or no `model:` (fixed-class mode, `LightningCLI(Model)`): TARGET
    is the class and the keys are its arguments. TARGET is then required.
  The same holds for `data:` and --datamodule. --init-args and --datamodule-args apply on top
  of the files, as `--model.KEY=...` after `--config` would.

Child process only: imports lightning (or pytorch_lightning) and jsonargparse.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tpulint.runtime.child.flavour import Flavour
from tpulint.runtime.errors import VerifyError
from tpulint.runtime.frames import CodeFilter
from tpulint.runtime.trainer_args import describe

# Arguments of `Trainer.fit` that verify does not pass on, and why.
IGNORED_FIT_ARGS = {
    "ckpt_path": "verify trains from the initial weights (resuming would restore the epoch and"
    " step counters past verify's run)",
}


@dataclass
class FromConfig:
    """What LightningCLI built from the config files."""

    model: Any
    datamodule: Any | None
    trainer_args: dict[str, Any]  # the `trainer:` arguments that differ from the defaults
    shown_trainer_args: dict[str, Any]  # the same as written (class_path/init_args)
    model_args: dict[str, Any]  # the model's resolved init_args, JSON-able
    datamodule_args: dict[str, Any] | None
    ignored_fit_args: dict[str, tuple[Any, str]] = field(default_factory=dict)
    # LightningCLI's `optimizer:`/`lr_scheduler:` sections, when it patched them into the
    # model's configure_optimizers: {"optimizer", "lr_scheduler", "model_has_own"}
    optimizer_patch: dict[str, Any] | None = None


class _TrainerCall:
    """Stands in for the Trainer class while LightningCLI runs its `fit` subcommand: records
    the keyword arguments the Trainer would be built with, and those of the fit call."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.fit_kwargs: dict[str, Any] = {}

    def fit(self, **kwargs: Any) -> None:
        self.fit_kwargs = kwargs


def _verify_cli_class(base: type) -> type:
    class VerifyCLI(base):  # type: ignore[misc, valid-type]
        """LightningCLI whose `fit` records the Trainer's arguments instead of training."""

        def instantiate_trainer(self, **kwargs: Any) -> Any:
            real = self.trainer_class
            self.trainer_class = _TrainerCall
            try:
                return super().instantiate_trainer(**kwargs)
            finally:
                self.trainer_class = real

    return VerifyCLI


def _load_file(path: str) -> Any:
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            return yaml.safe_load(handle)
    except (OSError, yaml.YAMLError):
        return None  # LightningCLI reports it, in its words


def names_class(configs: list[str], key: str) -> bool:
    """Whether a config's `key:` section names its class (a `class_path`, or the class
    name alone), which is LightningCLI's subclass mode."""
    for path in configs:
        data = _load_file(path)
        if not isinstance(data, dict):
            continue
        section = data.get(key)
        if isinstance(section, str) or (isinstance(section, dict) and "class_path" in section):
            return True
    return False


def class_path_of(configs: list[str], key: str) -> str | None:
    """The last dotted `class_path` of the `key:` section, to find the Lightning package of the
    class before LightningCLI is built."""
    found = None
    for path in configs:
        data = _load_file(path)
        section = data.get(key) if isinstance(data, dict) else None
        if isinstance(section, dict) and isinstance(section.get("class_path"), str):
            found = section["class_path"]
        elif isinstance(section, str):
            found = section
    return found if found and "." in found else None


def _non_default(values: dict[str, Any], signature: inspect.Signature) -> dict[str, Any]:
    changed = {}
    for name, value in values.items():
        parameter = signature.parameters.get(name)
        if parameter is None or parameter.default is inspect.Parameter.empty:
            changed[name] = value
            continue
        try:
            same = bool(value == parameter.default)
        except Exception:  # an object whose == is not a bool
            same = False
        if not same:
            changed[name] = value
    return changed


def _plain(value: Any) -> Any:
    """A jsonargparse Namespace (or a list of them) as plain dicts and lists."""
    as_dict = getattr(value, "as_dict", None)
    if callable(as_dict):
        return describe(as_dict())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return describe(value)


def _root_cause(exc: BaseException) -> BaseException:
    """jsonargparse wraps an exception raised by the user's constructor in its own: the
    innermost one is the user's."""
    seen = set()
    while exc.__cause__ is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc = exc.__cause__
    return exc


def summarize_parser_error(text: str) -> str:
    """jsonargparse's multi-line error as one line: the keys and the innermost problems,
    without the union bookkeeping (`Subtypes: ...`, `Given value: ...`, the NoneType branch)."""
    noise = (
        "Does not validate against any of the",
        "Subtypes:",
        "Errors:",
        "Given value type:",
        "Given value:",
        "- Expected a <class 'NoneType'>",
    )
    parts = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(noise):
            continue
        if line.startswith('Parser key "') and line.endswith('":'):
            line = line[len('Parser key "') : -2] + ":"
        elif line.startswith("- Problem with given class_path"):
            line = "(" + line[len("- Problem with given class_path ") :].rstrip(":") + ")"
        elif line.startswith("- "):
            line = line[2:]
        parts.append(line)
    return " ".join(parts) or text.strip()


def build_from_config(
    configs: list[str],
    package: Flavour,
    model_class: Any | None,
    datamodule_class: Any | None,
    init_args: dict[str, Any],
    datamodule_args: dict[str, Any],
    code: CodeFilter,
    user_error: Callable[[str, BaseException, CodeFilter | None], VerifyError],
) -> FromConfig:
    cli_module = package.module("cli")
    if not getattr(cli_module, "_JSONARGPARSE_SIGNATURES_AVAILABLE", True):
        raise VerifyError(
            "--config needs jsonargparse with its signatures extra (LightningCLI's parser),"
            " which is not installed: pip install 'tpulint[xla]'"
        )
    subclass_model = names_class(configs, "model")
    subclass_data = names_class(configs, "data")
    if model_class is None and not subclass_model:
        raise VerifyError(
            "--config: no model: give TARGET (the LightningModule class), or a `model:` with a"
            " class_path in the config"
        )
    overlay: dict[str, Any] = {}
    if init_args:
        overlay["model"] = {"init_args": init_args} if subclass_model else init_args
    if datamodule_args:
        overlay["data"] = {"init_args": datamodule_args} if subclass_data else datamodule_args
    args = ["fit"]
    for path in configs:
        args += ["--config", path]
    if overlay:
        args += ["--config", json.dumps(overlay)]

    cli_class = _verify_cli_class(cli_module.LightningCLI)
    argv = sys.argv
    sys.argv = argv[:1]  # LightningCLI warns when it is given args and sys.argv has some too
    try:
        cli = cli_class(
            model_class,
            datamodule_class,
            save_config_callback=None,  # verify writes no files of the user's run
            trainer_class=package.Trainer,
            subclass_mode_model=model_class is not None and subclass_model,
            subclass_mode_data=datamodule_class is not None and subclass_data,
            args=args,
            run=True,
            parser_kwargs={"exit_on_error": False},
        )
    except VerifyError:
        raise
    except (Exception, SystemExit) as exc:
        root = _root_cause(exc)
        if root is not exc and code.site_of_traceback(root.__traceback__) is not None:
            raise user_error("building from --config failed", root, code) from None
        if type(exc).__name__ == "ArgumentError" or isinstance(exc, (ValueError, TypeError)):
            message = summarize_parser_error(str(exc))
            detail = str(exc)
            raise VerifyError(f"--config: {message}", detail) from None
        raise user_error("building from --config failed", exc, code) from None
    finally:
        sys.argv = argv

    call: _TrainerCall = cli.trainer
    trainer_signature = inspect.signature(package.Trainer.__init__)
    trainer_args = _non_default(
        {k: v for k, v in call.kwargs.items() if k != "callbacks"}, trainer_signature
    )
    if call.kwargs.get("callbacks"):
        trainer_args["callbacks"] = list(call.kwargs["callbacks"])
    written = cli.config["fit"]
    shown = {
        name: _plain(written["trainer"][name])
        if name in written["trainer"]
        else describe(trainer_args[name])
        for name in trainer_args
    }
    fit_signature = inspect.signature(package.Trainer.fit)
    fit_args = _non_default(
        {k: v for k, v in call.fit_kwargs.items() if k not in ("model", "datamodule")},
        fit_signature,
    )
    ignored = {
        name: (value, IGNORED_FIT_ARGS.get(name, "verify calls Trainer.fit with the model only"))
        for name, value in fit_args.items()
    }
    return FromConfig(
        optimizer_patch=_optimizer_patch(cli.model, written),
        model=cli.model,
        datamodule=cli.datamodule,
        trainer_args=trainer_args,
        shown_trainer_args=shown,
        model_args=_init_args(written.get("model")),
        datamodule_args=_init_args(written.get("data")) if cli.datamodule is not None else None,
        ignored_fit_args=ignored,
    )


def _optimizer_patch(model: Any, written: Any) -> dict[str, Any] | None:
    """LightningCLI replaces the model's configure_optimizers with one that returns the config's
    optimizer, as an instance attribute. Pickling the model (which the multi-process XLA
    launcher does) drops it: a bound method pickles as `getattr(model, name)`, which finds the
    class's method again (Lightning issue #16489). Recorded here; main.py reports it when the
    Trainer's strategy pickles the model."""
    if "configure_optimizers" not in vars(model):
        return None

    def class_path(key: str) -> str | None:
        section = _plain(written.get(key)) if key in written else None
        return section.get("class_path") if isinstance(section, dict) else None

    own = any(
        "configure_optimizers" in vars(cls)
        for cls in type(model).__mro__
        if cls.__module__.split(".")[0] not in ("lightning", "pytorch_lightning")
    )
    return {
        "optimizer": class_path("optimizer"),
        "lr_scheduler": class_path("lr_scheduler"),
        "model_class": type(model).__qualname__,
        "model_has_own": own,
    }


def _init_args(section: Any) -> dict[str, Any]:
    plain = _plain(section) if section is not None else {}
    if isinstance(plain, dict) and "class_path" in plain:
        return dict(plain.get("init_args") or {})
    return plain if isinstance(plain, dict) else {}
