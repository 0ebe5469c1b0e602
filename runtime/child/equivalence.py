"""Record what the training computes, for `verify --compare`'s equivalence check.

Both runs of a comparison (the module as written and as rewritten) are made deterministic in
the same way, then this records, per core and per step, the loss and the norm of the
gradients (before they are all-reduced: each core's own), and every parameter at the end of
the epochs asked for (verify may add epochs to find a steady window, not necessarily as many
in both runs; the comparison covers the planned ones).
The parent compares the two records (runtime/judge/equivalence.py); the parameters, too big for
the event log, are saved by the first run and compared by the second, which logs one summary
per parameter.

What the user's code computes besides the training is recorded too, at the end of every epoch
(when the next one starts, after every epoch-end hook ran, and when training ends): the
module's and the user's callbacks' host-side state (attributes holding numbers, strings,
lists, dicts, numpy arrays and tensors on the host, with their Python types; tensors on the
device by type, dtype and shape only: reading their values would add transfers and graphs to
the run) and the values logged (`trainer.callback_metrics`: each epoch's values are new
tensors, kept and read once when training ends, so the steps measured do not change). A
rewrite that leaves a tensor where a float was, or a different number, shows there with the
attribute's name.

Determinism, on both sides alike:

* every host RNG (torch, numpy, random) and Lightning's sampler seed are seeded before the
  module is built, so both start from the same parameters and shuffle the same way;
* each core's XLA RNG is seeded with the seed plus its rank when training starts (dropout
  draws differently on each core, as in a real run, but the same on both sides);
* data loading: the replicas' loader threads share the host RNGs, so their draws (random
  augmentation in `__getitem__`, a `RandomSampler`, the seeds of worker processes) would
  interleave differently from run to run. Each batch is fetched under one lock, with the
  host RNGs set from (seed, core, epoch, batch) and put back afterwards.

Child process only: imports torch, torch_xla and Lightning.
"""

from __future__ import annotations

import contextlib
import functools
import random
import threading
from pathlib import Path
from typing import Any

import torch
from tpulint.runtime.events import EventLog

PARAMS_ORIGINAL = "params-original.pt"

# The recorder of this run: Lightning's XLA launcher pickles the Trainer into the replica
# process, forked from this one, where unpickling finds the instance here (as StepRecorder).
_ACTIVE: EquivalenceRecorder | None = None


def _active() -> EquivalenceRecorder:
    if _ACTIVE is None:
        raise RuntimeError("no EquivalenceRecorder in this process")
    return _ACTIVE


def _derived_seed(*parts: int) -> int:
    value = 0x9E3779B9
    for part in parts:
        value = (value * 1_000_003 + int(part) + 0x7F4A7C15) % (2**31 - 1)
    return value


class _HostRngs:
    """Set the host RNGs to a derived seed and restore them afterwards, under one lock."""

    lock = threading.RLock()

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def run(self, parts: tuple[int, ...], call: Any, *args: Any, **kwargs: Any) -> Any:
        import numpy as np

        with self.lock:
            saved = (torch.get_rng_state(), np.random.get_state(), random.getstate())
            derived = _derived_seed(self.seed, *parts)
            torch.manual_seed(derived)
            np.random.seed(derived)
            random.seed(derived)
            try:
                return call(*args, **kwargs)
            finally:
                torch.set_rng_state(saved[0])
                np.random.set_state(saved[1])
                random.setstate(saved[2])


def _loader_rank(loader: Any) -> int:
    """The core a DataLoader feeds: its DistributedSampler's rank (Lightning injects one per
    core), else the tag verify's sampler recorder puts on it, else 0."""
    batch_sampler = getattr(loader, "batch_sampler", None)
    for sampler in (getattr(loader, "sampler", None), getattr(batch_sampler, "sampler", None)):
        rank = getattr(sampler, "rank", None)
        if isinstance(rank, int):
            return rank
    rank = getattr(loader, "_tpulint_rank", None)
    return rank if isinstance(rank, int) else 0


def deterministic_loading(seed: int) -> None:
    """Make every DataLoader's host-side randomness a function of (seed, core, epoch, batch)."""
    from torch.utils.data import dataloader

    rngs = _HostRngs(seed)
    base_init = dataloader._BaseDataLoaderIter.__init__
    next_data = dataloader._SingleProcessDataLoaderIter._next_data

    @functools.wraps(base_init)
    def __init__(self: Any, loader: Any) -> None:
        epoch = getattr(loader, "_tpulint_equivalence_epoch", -1) + 1
        with contextlib.suppress(AttributeError, ValueError):
            loader._tpulint_equivalence_epoch = epoch
        rank = _loader_rank(loader)
        self._tpulint_key = (rank, epoch)
        self._tpulint_batch = 0
        # The sampler's order and the workers' base seed are drawn here.
        rngs.run((rank, epoch, -1), base_init, self, loader)

    @functools.wraps(next_data)
    def _next_data(self: Any) -> Any:
        rank, epoch = getattr(self, "_tpulint_key", (0, 0))
        batch = getattr(self, "_tpulint_batch", 0)
        self._tpulint_batch = batch + 1
        return rngs.run((rank, epoch, batch), next_data, self)

    dataloader._BaseDataLoaderIter.__init__ = __init__
    dataloader._SingleProcessDataLoaderIter._next_data = _next_data


def seed_host(seed: int) -> None:
    """Seed the host RNGs and Lightning's sampler seed (PL_GLOBAL_SEED) before the module is
    built, as `seed_everything(seed, workers=True)` does."""
    try:
        from lightning.fabric.utilities.seed import seed_everything
    except ImportError:  # pragma: no cover - verify needs lightning
        from pytorch_lightning import seed_everything  # type: ignore[no-redef]
    seed_everything(seed, workers=True, verbose=False)


class LineTrace:
    """The lines of the given files that run during training steps: which rewrites the
    training exercised (a rewrite in `validation_step`, which runs too but does not change the
    parameters, or in another class is not proven by training). Only frames of those files
    are traced line by line, and only in a replica thread inside a training step; other calls
    cost one check."""

    def __init__(self, files: list[str]) -> None:
        import os

        self.files = {os.path.realpath(f) for f in files} | set(files)
        self.lines: dict[str, set[int]] = {}
        self.local = threading.local()  # .active: in a training step of this thread

    def install(self) -> None:
        import sys

        threading.settrace(self._call)
        sys.settrace(self._call)

    def _call(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "call" and frame.f_code.co_filename in self.files:
            return self._line
        return None

    def _line(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "line" and getattr(self.local, "active", False):
            self.lines.setdefault(frame.f_code.co_filename, set()).add(frame.f_lineno)
        return self._line


# --- host-side state ----------------------------------------------------------------------

# Attributes Lightning and torch set on a module besides those a bare LightningModule has
# after `__init__` (set lazily, when moved, attached or hooked).
_FRAMEWORK_ATTRIBUTES = frozenset(
    {
        "_device",
        "_dtype",
        "_trainer",
        "_fabric",
        "_fabric_optimizers",
        "_hparams",
        "_hparams_initial",
        "_hparams_name",
        "_log_hyperparams",
        "_current_fx_name",
        "_metric_attributes",
        "_compiler_ctx",
        "_example_input_array",
        "_param_requires_grad_state",
        "_jit_is_scripting",
        "_running_torchscript",
        "_should_prevent_trainer_and_dataloaders_deepcopy",
        "_register_sharded_tensor_state_dict_hooks_if_available",
        "_strict_loading",
        "_automatic_optimization",
        "_compiled_call_impl",
        "_device_mesh",
        "trainer",
    }
)
_FRAMEWORK_ROOTS = ("lightning", "pytorch_lightning", "lightning_fabric", "tpulint")
_ITEMS = 64  # elements of a list or dict recorded one by one; longer ones are summarised
_HEAD = 16  # values of a host tensor or array recorded one by one
_DEPTH = 4


def _framework_names(module: Any) -> frozenset[str]:
    """The attributes of the LightningModule class the module derives from, as a bare
    instance has them, and of torch's Module: the framework's, not the user's."""
    base = next(
        (
            cls
            for cls in type(module).__mro__
            if cls.__name__ == "LightningModule"
            and cls.__module__.split(".", 1)[0] in _FRAMEWORK_ROOTS
        ),
        None,
    )
    names = set(vars(torch.nn.Module()))
    if base is not None:
        with contextlib.suppress(Exception):  # a base that cannot be built bare
            names |= set(vars(base()))
    return frozenset(names | _FRAMEWORK_ATTRIBUTES)


def _number(value: float) -> float | str:
    import math

    return value if math.isfinite(value) else repr(value)


def encode(value: Any, depth: int = 0) -> dict[str, Any]:
    """A JSON description of a value, with its Python type: numbers, strings, containers
    (the first _ITEMS elements, and a sum of all numbers), host tensors and numpy arrays
    (dtype, shape, a sum, the largest magnitude, the first values); device tensors by
    dtype and shape; anything else by type."""
    import numpy as np

    kind = type(value)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
    if value is None or isinstance(value, (bool, int, str)):
        if isinstance(value, str):
            return {"t": name, "v": value[:200], "n": len(value)}
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**53:
            return {"t": name, "v": str(value)}
        return {"t": name, "v": value}
    if isinstance(value, float):
        return {"t": name, "v": _number(value)}
    if isinstance(value, np.generic) and not isinstance(value, np.object_):
        item = value.item()
        return {
            "t": f"numpy.{kind.__name__}",
            "v": _number(item) if isinstance(item, float) else item,
        }
    if isinstance(value, torch.Tensor):
        out: dict[str, Any] = {
            "t": "torch.Tensor",
            "device": value.device.type,
            "dtype": str(value.dtype).replace("torch.", ""),
            "shape": list(value.shape),
        }
        if value.device.type == "cpu" and not value.is_complex():
            out.update(_stats(value.detach().reshape(-1).double().numpy()))
        return out
    if isinstance(value, np.ndarray):
        out = {"t": "numpy.ndarray", "dtype": str(value.dtype), "shape": list(value.shape)}
        if value.dtype.kind in "biuf":
            out.update(_stats(value.reshape(-1).astype(np.float64)))
        return out
    if depth >= _DEPTH:
        return {"t": name}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "deque":
        items = list(value)
        out = {"t": name, "n": len(items), "items": [encode(v, depth + 1) for v in items[:_ITEMS]]}
        numbers = [
            float(v) for v in items if isinstance(v, (int, float)) and not isinstance(v, bool)
        ]
        if len(items) > _ITEMS and len(numbers) == len(items):
            out["sum"] = _number(sum(numbers))
        return out
    if isinstance(value, dict):
        keys = list(value)[:_ITEMS]
        return {
            "t": name,
            "n": len(value),
            "items": {repr(k)[:80]: encode(value[k], depth + 1) for k in keys},
        }
    if isinstance(value, (set, frozenset)):
        try:
            items = sorted(value)
        except TypeError:
            return {"t": name, "n": len(value)}
        return {"t": name, "n": len(items), "items": [encode(v, depth + 1) for v in items[:_ITEMS]]}
    return {"t": name}


def _stats(values: Any) -> dict[str, Any]:
    import numpy as np

    if values.size == 0:
        return {"sum": 0.0, "absmax": 0.0, "head": []}
    finite = values[np.isfinite(values)]
    return {
        "sum": _number(float(values.sum())),
        "absmax": float(np.abs(finite).max()) if finite.size else 0.0,
        "head": [_number(float(v)) for v in values[:_HEAD]],
    }


def _user_attributes(obj: Any, framework: frozenset[str]) -> dict[str, Any]:
    return {
        name: value
        for name, value in vars(obj).items()
        if name not in framework and not name.startswith("_tpulint")
    }


def _is_framework(obj: Any) -> bool:
    return type(obj).__module__.split(".", 1)[0] in _FRAMEWORK_ROOTS


def host_state(
    trainer: Any,
    pl_module: Any,
    framework: frozenset[str],
    pending: list[tuple[dict[str, Any], Any]],
) -> dict[str, Any]:
    """The module's and the user's callbacks' attributes, and the logged values. A logged
    value on the device is described now and read when training ends (`pending`): Lightning
    computes a new tensor for each epoch's value, and reading it now would add a transfer
    to the run being measured."""
    module = {name: encode(value) for name, value in _user_attributes(pl_module, framework).items()}
    callbacks: dict[str, Any] = {}
    for callback in getattr(trainer, "callbacks", []) or []:
        if _is_framework(callback) or isinstance(callback, EquivalenceRecorder):
            continue
        label = type(callback).__name__
        while label in callbacks:
            label += "'"
        callbacks[label] = {
            name: encode(value) for name, value in _user_attributes(callback, frozenset()).items()
        }
    logged = {}
    for name, value in sorted(dict(getattr(trainer, "callback_metrics", {}) or {}).items()):
        entry = encode(value)
        if isinstance(value, torch.Tensor) and value.device.type != "cpu" and value.numel() <= 4096:
            pending.append((entry, value))
        logged[str(name)] = entry
    return {"module": module, "callbacks": callbacks, "logged": logged}


def read_pending(pending: list[tuple[dict[str, Any], Any]]) -> None:
    """Fill in the values of the logged device tensors (at the end of training)."""
    for entry, tensor in pending:
        try:
            values = tensor.detach().reshape(-1).cpu()
        except Exception:  # a tensor that cannot be read back is described by type only
            continue
        if not values.is_complex():
            entry.update(_stats(values.double().numpy()))


def _scalar(value: Any) -> torch.Tensor | None:
    if isinstance(value, dict):
        value = value.get("loss")
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.detach().reshape(()).float()
    return None


class EquivalenceRecorder:
    """A Lightning callback (made a subclass of the run's Callback class by `with_base`)."""

    def __init__(
        self, log: EventLog, seed: int, directory: str, role: str, trace: LineTrace | None = None
    ) -> None:
        self.events = log
        self.seed = seed
        self.directory = Path(directory)
        self.role = role
        self.trace = trace
        self._local = threading.local()
        global _ACTIVE
        _ACTIVE = self

    def __deepcopy__(self, memo: dict[int, Any]) -> EquivalenceRecorder:
        return self  # shared by the replicas' Trainer copies

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return _active, ()

    # --- per replica --------------------------------------------------------------------

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        import torch_xla.core.xla_model as xm

        rank = int(trainer.global_rank)
        self._local.rank = rank
        self._local.losses = []
        self._local.norms = []
        self._local.pending = None
        # The epochs asked for: verify may add some to find a steady window (runtime/steady.py),
        # and the two runs need not add the same number, so the comparison covers these.
        self._local.planned = int(trainer.fit_loop.max_epochs)
        self._local.planned_steps = None
        self._local.saved = False
        self._local.states = []
        self._local.logged_reads = []  # logged device tensors, read when training ends
        self._local.framework = _framework_names(pl_module)
        xm.set_rng_state(_derived_seed(self.seed, rank), device=str(pl_module.device))

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        # Every hook of the previous epoch has run (callbacks' and the module's): its state.
        epoch = int(trainer.current_epoch)
        if epoch > 0:
            self._snapshot(trainer, pl_module, epoch - 1)

    def _snapshot(self, trainer: Any, pl_module: Any, epoch: int) -> None:
        planned = getattr(self._local, "planned", None)
        if planned is not None and epoch >= planned:
            return  # an epoch verify added to find a steady window: not compared
        states = getattr(self._local, "states", None)
        if states is None or any(s["epoch"] == epoch for s in states):
            return
        framework = getattr(self._local, "framework", None) or _framework_names(pl_module)
        pending = self._local.__dict__.setdefault("logged_reads", [])
        try:
            state = host_state(trainer, pl_module, framework, pending)
        except Exception as exc:  # a state that cannot be described is said, not fatal
            state = {"error": f"{type(exc).__name__}: {exc}"}
        states.append({"epoch": epoch, **state})

    def on_train_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
    ) -> None:
        if self.trace is not None:
            self.trace.local.active = True

    def on_validation_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0
    ) -> None:
        # Validation steps run too, and what they compute shows in the logged values and the
        # state compared at the end of the epoch: their rewrites are exercised.
        if self.trace is not None:
            self.trace.local.active = True

    def on_validation_batch_end(
        self,
        trainer: Any,
        pl_module: Any,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        if self.trace is not None:
            self.trace.local.active = False

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.current_epoch + 1 != getattr(self._local, "planned", None):
            return
        self._local.planned_steps = len(self._local.losses)
        if int(trainer.global_rank) == 0:
            self._parameters(pl_module)
            self._local.saved = True

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        grads = [p.grad.detach().float() for p in pl_module.parameters() if p.grad is not None]
        if not grads:
            return
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
        self._local.pending = norm

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self.trace is not None:
            self.trace.local.active = False
        loss = _scalar(outputs)
        nan = torch.tensor(float("nan"), device=pl_module.device)
        self._local.losses.append(loss if loss is not None else nan)
        pending = getattr(self._local, "pending", None)
        self._local.norms.append(pending if pending is not None else nan)
        self._local.pending = None

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        rank = getattr(self._local, "rank", int(trainer.global_rank))
        # The last epoch's state: every `on_train_epoch_end` has run (the epoch counter has
        # moved past it, unless the run stopped inside its first epoch).
        self._snapshot(trainer, pl_module, max(int(trainer.current_epoch) - 1, 0))
        read_pending(getattr(self._local, "logged_reads", []))
        self.events.write(
            "equivalence_state",
            rank=rank,
            role=self.role,
            epochs=getattr(self._local, "states", []),
        )
        losses = getattr(self._local, "losses", [])
        norms = getattr(self._local, "norms", [])
        # One read back at the end, not one per step: the steps stay as they would be.
        values = torch.stack(losses + norms).cpu().tolist() if losses else []
        planned = getattr(self._local, "planned_steps", None)
        self.events.write(
            "equivalence_trace",
            rank=rank,
            role=self.role,
            loss=values[: len(losses)],
            grad_norm=values[len(losses) :],
            planned_steps=planned if planned is not None else len(losses),
        )
        if rank == 0:
            if not getattr(self._local, "saved", False):
                self._parameters(pl_module)
            if self.trace is not None:
                self.events.write(
                    "equivalence_lines",
                    role=self.role,
                    files={f: sorted(lines) for f, lines in self.trace.lines.items()},
                )

    # --- the end state ------------------------------------------------------------------

    def _parameters(self, pl_module: Any) -> None:
        params = {name: p.detach().cpu().float() for name, p in pl_module.named_parameters()}
        if self.role == "original":
            self.directory.mkdir(parents=True, exist_ok=True)
            torch.save(params, self.directory / PARAMS_ORIGINAL)
            self.events.write("equivalence_params", role=self.role, saved=len(params))
            return
        path = self.directory / PARAMS_ORIGINAL
        if not path.exists():
            self.events.write("equivalence_params", role=self.role, missing=True)
            return
        original = torch.load(path)
        summary = {}
        for name in sorted(set(params) | set(original)):
            a, b = original.get(name), params.get(name)
            if a is None or b is None or a.shape != b.shape:
                summary[name] = {
                    "shape": [list(t.shape) if t is not None else None for t in (a, b)]
                }
                continue
            diff = float((a - b).abs().max()) if a.numel() else 0.0
            scale = float(torch.maximum(a.abs().max(), b.abs().max())) if a.numel() else 0.0
            summary[name] = {"max_abs": diff, "scale": scale, "numel": a.numel()}
        self.events.write("equivalence_params", role=self.role, parameters=summary)


def install(spec_equivalence: dict[str, Any], log: EventLog) -> EquivalenceRecorder:
    """Seed and make loading deterministic (before the module is built); the callback to add
    to the Trainer."""
    seed = int(spec_equivalence.get("seed", 0))
    seed_host(seed)
    deterministic_loading(seed)
    trace = None
    if spec_equivalence.get("trace"):
        trace = LineTrace(list(spec_equivalence["trace"]))
        trace.install()
    return EquivalenceRecorder(log, seed, spec_equivalence["dir"], spec_equivalence["role"], trace)
