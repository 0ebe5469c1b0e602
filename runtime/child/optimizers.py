"""Optimizers that hold parameters the model no longer trains.

Moving a module to the XLA device replaces its parameter tensors: CPU and XLA tensors cannot
share storage, so `Module._apply` cannot swap the data in place and sets new Parameter objects
(`torch.__future__.get_overwrite_module_params_on_conversion()`, or a tensor type that is not
shallow-copy compatible: torch/nn/modules/module.py, `_apply`). An optimizer built before the
move (in `__init__`, a recipe's pattern, or over a parameter list taken before the move) keeps
the old CPU tensors: it never updates the weights the model trains with, and its gradient
reduction meets CPU tensors without gradients. On a TPU such a module trains nothing.

verify records where each optimizer was built (the user's line) and, before the first step,
checks that every parameter each optimizer holds is a parameter of the module after the move.
Child process only: imports torch.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from typing import Any

import torch
from tpulint.runtime.errors import StaleOptimizerParameters
from tpulint.runtime.events import EventLog
from tpulint.runtime.frames import CodeFilter

_STATE: dict[str, Any] = {}


def install(log: EventLog, code: CodeFilter) -> None:
    """Remember the user's line that builds each optimizer (before the user's code runs)."""
    _STATE.update(log=log, code=code)
    original = torch.optim.Optimizer.__init__
    if getattr(original, "_tpulint", False):
        return

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        frame = sys._getframe(1)
        # Past the __init__ of the optimizer's own class hierarchy (AdamW -> Adam -> ...).
        while (
            frame is not None
            and frame.f_code.co_name == "__init__"
            and frame.f_locals.get("self") is self
        ):
            frame = frame.f_back
        site = code.site_of(frame, fallback=False) if frame is not None else None
        if site is None:
            return
        # Not `_tpulint_built_at`: the recorder takes an object with that attribute in a failing
        # frame for the user's DataLoader.
        with contextlib.suppress(AttributeError):  # an optimizer with __slots__
            self._tpulint_optimizer_site = site.to_json()
        # Also in the log: Optimizer.__getstate__ keeps only its state and param groups, so
        # the attribute does not survive the pickling into the replica processes.
        log.write(
            "optimizer_built",
            optimizer=type(self).__name__,
            params=sum(len(g["params"]) for g in self.param_groups),
            site=site.to_json(),
        )

    __init__._tpulint = True  # type: ignore[attr-defined]
    torch.optim.Optimizer.__init__ = __init__


def _active_check() -> OptimizerCheck:
    return _STATE["check"]


def _optimizers(trainer: Any) -> list[Any]:
    found = []
    for optimizer in getattr(trainer, "optimizers", None) or []:
        inner = getattr(optimizer, "optimizer", None)  # Lightning's LightningOptimizer
        found.append(inner if isinstance(inner, torch.optim.Optimizer) else optimizer)
    return [o for o in found if isinstance(o, torch.optim.Optimizer)]


class OptimizerCheck:
    """A Callback (made a Lightning one by flavour.with_base): the check runs in every
    replica at the start of training, after the strategy moved the module and set up the
    optimizers. Lightning pickles the Trainer into the replica processes, which are forked
    from this one: unpickling finds this same instance (its class was made a subclass of the
    Lightning package's Callback, which pickle could not name)."""

    def __init__(self) -> None:
        _STATE["check"] = self

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return _active_check, ()

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        held = {id(p) for p in pl_module.parameters()}
        for index, optimizer in enumerate(_optimizers(trainer)):
            params = [p for group in optimizer.param_groups for p in group["params"]]
            # Left behind on the host: what the model computes with is on the XLA device.
            stale = [p for p in params if id(p) not in held and p.device.type != "xla"]
            if not stale:
                continue
            devices = sorted({str(p.device) for p in stale})
            built = getattr(optimizer, "_tpulint_optimizer_site", None)
            message = (
                f"{type(optimizer).__name__} (optimizer {index}) holds {len(stale)} of its"
                f" {len(params)} parameters on {', '.join(devices)}, none of them a parameter"
                " of the module after its move to the XLA device: it was built before Lightning"
                " moved the module (in __init__, or over a parameter list taken before the"
                " move), so it never updates the weights the model trains with; build it in"
                " configure_optimizers() over self.parameters()"
            )
            log = _STATE.get("log")
            if log is not None:
                log.write(
                    "stale_optimizer",
                    rank=trainer.global_rank,
                    index=index,
                    optimizer=type(optimizer).__name__,
                    stale=len(stale),
                    total=len(params),
                    devices=devices,
                    site=built,
                    params=len(params),
                    message=message,
                )
            raise StaleOptimizerParameters(message)
