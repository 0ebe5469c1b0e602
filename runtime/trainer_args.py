"""The Trainer's keyword arguments for a verify run: what the user asked for (their LightningCLI
`--config` files, then `--trainer-args`) merged with verify's own settings, in one place.

Verify's own settings (`own_settings`) win where they conflict, and every conflict is kept as
an `Override` (what was asked, what was used, why) for the report. The user's callbacks are
kept, except those verify's own settings make impossible or that would cut the run short
(`DROPPED_CALLBACKS`); verify's recorder is appended to them.

Standard library only: the parent validates `--trainer-args` and reports with it, the child
builds the Trainer with it (runtime/child/main.py).
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tpulint.runtime.errors import VerifyError

# Lightning's two distributions: `lightning` (lightning.pytorch) and the standalone
# `pytorch_lightning`; same Trainer, different import names.
TRAINER_SOURCES = {
    "lightning": ("lightning", "pytorch", "trainer", "trainer.py"),
    "pytorch_lightning": ("pytorch_lightning", "trainer", "trainer.py"),
}


def _never(_: Any) -> bool:
    return False


# Stand-ins only the training child can build (runtime/child/stand_ins.py): a logger that
# accepts every call and writes nothing, and a progress bar that prints nothing.
STAND_IN_LOGGER = "<tpulint stand-in logger>"
STAND_IN_PROGRESS_BAR = "<tpulint silent progress bar>"

# `Own.value` for a setting verify only adjusts when the user gave it (see `combine`).
UNSET: Any = type("Unset", (), {"__repr__": lambda self: "UNSET"})()


def _class_names(value: Any) -> set[str]:
    return {cls.__name__ for cls in type(value).__mro__}


@dataclass(frozen=True)
class Own:
    """One Trainer argument verify sets itself, and why.

    `agrees(user_value)`: the user's value means the same thing here (no override is reported).
    `combine(user_value)`: for a budget, the value to use given the user's (e.g. the smaller of
    the two); None: verify's value is used as is. With `value=UNSET` the argument is left
    out unless the user gave it."""

    name: str
    value: Any
    reason: str
    agrees: Callable[[Any], bool] = _never
    combine: Callable[[Any], Any] | None = None


def own_settings(
    *,
    accelerator: Any,
    cores: int | None,
    epochs: int,
    steps: int | None,
    run_dir: str,
    emulated: bool = False,
    eval_steps: int = 4,
) -> list[Own]:
    """Verify's own Trainer settings, in one list (extend it here, with the reason)."""
    devices: Any = cores if cores else "auto"
    emulation = [
        Own(
            "precision",
            UNSET,
            "XLA:CPU, which emulates the cores, cannot all-reduce bf16 tensors; the emulated"
            " run uses 16-true, the same ops and shapes in 16 bits (a TPU runs bf16-true)",
            combine=lambda v: "16-true" if str(v) == "bf16-true" else v,
        )
    ]
    return [
        *(emulation if emulated else []),
        Own(
            "accelerator",
            accelerator,
            "verify runs on the XLA backend it found (TPU cores, or PJRT CPU emulating them)",
            agrees=lambda v: (
                (isinstance(v, str) and v.lower() in ("tpu", "auto"))
                or "XLAAccelerator" in _class_names(v)
            ),
        ),
        Own(
            "devices",
            devices,
            f"verify trains on {'--cores ' + str(cores) if cores else 'every TPU core'}"
            " (pass --cores to choose)",
            agrees=lambda v: v in ("auto", -1, "-1", devices, str(devices)),
        ),
        Own("num_nodes", 1, "verify runs on one host", agrees=lambda v: v in (1, "1")),
        Own(
            "strategy",
            "auto",
            "verify trains with Lightning's XLA data parallelism (XLAStrategy), which the"
            " accelerator selects",
            agrees=lambda v: isinstance(v, str) and v.lower() in ("auto", "xla"),
        ),
        Own("max_epochs", epochs, "--epochs sets the run's length"),
        Own("min_epochs", None, "--epochs sets the run's length"),
        Own("max_steps", -1, "--epochs and --steps set the run's length"),
        Own("min_steps", None, "--epochs and --steps set the run's length"),
        Own("max_time", None, "--timeout bounds the run"),
        Own(
            "limit_train_batches",
            steps if steps else 1.0,
            f"--steps {steps} caps the batches per epoch" if steps else "",
            combine=lambda v: _at_most(v, steps),
        ),
        Own("fast_dev_run", False, "--steps and --epochs set the run's length", agrees=_falsy),
        # Validation (and test, with --test) as the Trainer runs them, a few batches per run:
        # enough for their graphs, transfers and a ragged last batch. A user's 0 keeps a loop
        # off.
        Own(
            "limit_val_batches",
            eval_steps,
            f"verify runs at most {eval_steps} validation batches per run",
            combine=lambda v: _eval_budget(v, eval_steps),
        ),
        Own(
            "limit_test_batches",
            eval_steps,
            f"verify runs at most {eval_steps} test batches (with --test)",
            combine=lambda v: _eval_budget(v, eval_steps),
        ),
        Own(
            "num_sanity_val_steps",
            0,
            "the first validation run is validation's warm-up; a sanity check adds nothing",
            agrees=_falsy,
        ),
        Own(
            "logger",
            STAND_IN_LOGGER,
            "verify logs to a stand-in that takes every call your code and Lightning make"
            " (log_metrics, log_hyperparams, its experiment object) and writes nothing: no"
            " files, no network",
            # False stays False: the module is run without a logger, as the user runs it.
            combine=lambda v: False if _falsy(v) else STAND_IN_LOGGER,
        ),
        Own("enable_model_summary", False, "verify prints its own report", agrees=_falsy),
        Own("default_root_dir", run_dir, "verify writes only in its temporary run directory"),
    ]


def _falsy(value: Any) -> bool:
    return value is False or value == 0


def _eval_budget(requested: Any, budget: int) -> Any:
    """A validation or test budget: the user's 0 (the loop off) stays 0."""
    if requested in (0, 0.0) and not isinstance(requested, bool):
        return 0
    return _at_most(requested, budget)


def _at_most(requested: Any, budget: int | None) -> Any:
    """`limit_train_batches` under the step budget: the user's int if it is the smaller; the
    budget for a larger int or a fraction (the loader's length is not known up front)."""
    if budget is None:
        return requested
    if isinstance(requested, int) and not isinstance(requested, bool):
        return min(requested, budget)
    if isinstance(requested, float) and requested.is_integer() and requested > 1:
        return min(int(requested), budget)
    return budget


# Lightning callbacks verify removes from the user's list: matched by the name of a Lightning
# class the callback derives from (in either package).
DROPPED_CALLBACKS = {
    "ProgressBar": "verify prints its own report; a silent progress bar takes its place",
}
# Kept, and changed in the replica (runtime/child/stand_ins.py): ModelCheckpoint runs its
# logic but writes no file; EarlyStopping runs its check but does not end the run.


def drop_reason(callback: Any) -> str | None:
    """Why verify removes this callback from the user's list, or None to keep it."""
    for cls in type(callback).__mro__:
        module = getattr(cls, "__module__", "") or ""
        if module.startswith(("lightning.", "pytorch_lightning.")):
            reason = DROPPED_CALLBACKS.get(cls.__name__)
            if reason:
                return reason
    return None


@dataclass
class Override:
    """A Trainer argument the user asked for that verify replaced."""

    name: str
    requested: Any
    used: Any
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "requested": describe(self.requested),
            "used": describe(self.used),
            "reason": self.reason,
        }


@dataclass
class TrainerArgs:
    """The Trainer's keyword arguments in effect, and how they came about."""

    used: dict[str, Any]  # Trainer(**used)
    requested: dict[str, Any]  # what the user asked for (config files, then --trainer-args)
    overridden: list[Override] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "requested": {k: describe(v) for k, v in self.requested.items()},
            "used": {k: describe(v) for k, v in self.used.items()},
            "overridden": [o.to_json() for o in self.overridden],
        }


def merge(
    requested: dict[str, Any], own: Sequence[Own], verify_callbacks: Sequence[Any] = ()
) -> TrainerArgs:
    """The user's Trainer arguments with verify's own settings on top."""
    used = dict(requested)
    overridden: list[Override] = []
    for setting in own:
        if setting.name not in requested:
            if setting.value is not UNSET:
                used[setting.name] = setting.value
            continue
        asked = requested[setting.name]
        if setting.combine is not None:
            used[setting.name] = setting.combine(asked)
            if used[setting.name] != asked:
                overridden.append(Override(setting.name, asked, used[setting.name], setting.reason))
        elif setting.agrees(asked):
            used[setting.name] = setting.value
        else:
            used[setting.name] = setting.value
            overridden.append(Override(setting.name, asked, setting.value, setting.reason))

    asked_callbacks = requested.get("callbacks")
    if asked_callbacks is None:
        asked_callbacks = []
    elif not isinstance(asked_callbacks, (list, tuple)):
        asked_callbacks = [asked_callbacks]
    kept = []
    for callback in asked_callbacks:
        reason = drop_reason(callback)
        if reason is None:
            kept.append(callback)
        else:
            overridden.append(Override("callbacks", callback, None, reason))
    bar = [] if used.get("enable_progress_bar") is False else [STAND_IN_PROGRESS_BAR]
    used["callbacks"] = [*kept, *bar, *verify_callbacks]
    return TrainerArgs(used, dict(requested), overridden)


def describe(value: Any) -> Any:
    """A JSON-able form of a Trainer argument: plain values as they are, objects as
    `<module.Class>` (callbacks, loggers, plugins, the accelerator)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        return [describe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): describe(v) for k, v in value.items()}
    cls = type(value)
    return f"<{cls.__module__}.{cls.__qualname__}>"


# --- validating names against the Trainer's signature --------------------------------------


def check_names(
    names: Iterable[str], known: Iterable[str], option: str, what: str = "Trainer"
) -> None:
    """Raise a one-line VerifyError for the first name that is not a parameter of `what`."""
    known = list(known)
    for name in names:
        if name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        raise VerifyError(f"{option}: `{name}` is not an argument of {what}{hint}")


def trainer_parameters(distribution: str = "lightning") -> list[str] | None:
    """The keyword parameters of the installed `Trainer.__init__`, read from its source without
    importing it (importing Lightning takes seconds and pulls in torch); None when the source
    cannot be found or read."""
    parts = TRAINER_SOURCES[distribution]
    try:
        spec = importlib.util.find_spec(parts[0])  # a top-level name: nothing is imported
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = os.path.join(location, *parts[1:])
        try:
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read(), path)
        except (OSError, SyntaxError, ValueError):
            continue
        found = _init_parameters(tree, "Trainer")
        if found:
            return found
    return None


def _init_parameters(tree: ast.Module, class_name: str) -> list[str] | None:
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and node.name == class_name):
            continue
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                if item.args.kwarg is not None:
                    return None  # **kwargs: any name may be valid
                params = [*item.args.posonlyargs, *item.args.args, *item.args.kwonlyargs]
                return [p.arg for p in params[1:]]
    return None
