"""The project model: what the checked project's files say about each other.

Built once per run from every file's `ast` summary (tpulint.analysis.summary, cached by
content), it answers the questions a single file cannot:

- which classes are Lightning modules, data modules, callbacks, torch modules or
  torchmetrics metrics, through bases defined in other files and re-exports
  (`pkg/__init__.py: from .base import Model`);
- which functions are hot: step methods, `forward`, batch hooks, `Metric.update`,
  Callback batch hooks, and everything they call through any number of modules
  (`self.m()`, `helper()`, `losses.off_diag()`, `self.criterion(...)`,
  `self.metric.update(...)`, a method overridden in a subclass), with the chain that makes
  them hot ("called from training_step via pkg/model.py:41") and the guards every call on
  the way shares (`if batch_idx == 0:`);
- what a function returns (a tensor, a boolean mask, a module, numpy, a number, one of its
  parameters, a tuple of those) and what `self.<attr>` holds, so `loss = self._loss(...)`
  is known to be a tensor and `self.expert.cpu()` a module offload.

Classes are keyed by module-qualified name (`pkg.tasks.speaker_diarization.SpeakerDiarization`)
and resolved through each file's own imports, so two classes that share a name in different
modules are never confused. libcst stays the engine that runs the rules; this model only
feeds it facts.
"""

from __future__ import annotations

import builtins
import hashlib
import os
import re
from collections import deque
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, TypeVar

from tpulint.analysis.config_facts import ConfigFacts
from tpulint.analysis.guards import (
    RARE,
    condition_kinds,  # noqa: F401 (re-exported for rules)
    effective,
    settle_first_n,
)
from tpulint.analysis.hooks import (  # noqa: F401 (re-exported: the hook tables live there)
    CALLBACK_BATCH_HOOKS,
    COLD_METHODS,
    LIGHTNING_BATCH_HOOKS,
    STEP_METHODS,
    STEP_PART,
    is_cold_name,
    is_pytest_test,
    names_other_accelerator,
)
from tpulint.analysis.hot_code import HotCode, hot_code
from tpulint.analysis.inference import all_host, entry_attribute
from tpulint.analysis.kinds import ClassKind
from tpulint.analysis.modules import (  # noqa: F401 (re-exported)
    module_name_for_path,
    package_root,
    table_digest,
)
from tpulint.analysis.param_routes import SAFE_DECORATORS
from tpulint.analysis.param_routes import live as param_live
from tpulint.analysis.python_ast import parse_python
from tpulint.analysis.recursion import Recursion
from tpulint.analysis.scope import ProjectScope, _is_test_path, same_repository
from tpulint.analysis.summary import (
    Atom,
    ClassSummary,
    FunctionSummary,
    ModuleSummary,
    merge_built_kinds,
)
from tpulint.analysis.value_tables import (
    BATCH_PARAMS,
    EXTERNAL_HOST_METHOD_NAMES,
    MODULE_SELF_METHODS,
    TENSOR_METHODS_OF_MODULES,
    TOKENIZER_HOST_METHODS,
    external_host_method,
)

_T = TypeVar("_T")  # what a call record holds per argument (atoms, texts)

LIGHTNING_ROOTS = frozenset({"lightning", "pytorch_lightning", "lightning_fabric"})
# How a hand-written training loop's function is named as the root of hot code (the per-file
# context reads it: code of that function outside the loop runs once).
TRAINING_LOOP = "the training loop of"
_BUILTIN_NAMES = frozenset(dir(builtins))


def kind_of_external(qualname: str) -> ClassKind:
    """The kind of a class outside the project, from its qualified name alone."""
    root, _, _ = qualname.partition(".")
    last = qualname.rsplit(".", 1)[-1]
    if root in LIGHTNING_ROOTS:
        if last == "LightningModule":
            return ClassKind.LIGHTNING_MODULE | ClassKind.TORCH_MODULE
        if last == "LightningDataModule":
            return ClassKind.LIGHTNING_DATAMODULE
        if last == "Callback" or ".callbacks." in qualname:
            return ClassKind.CALLBACK
        return ClassKind.NONE
    if root == "torch" and (
        qualname == "torch.nn.Module"
        or qualname.startswith("torch.nn.modules.")
        or (
            qualname.startswith("torch.nn.")
            and last[:1].isupper()
            and qualname not in TENSOR_CLASSES
        )
    ):
        return ClassKind.TORCH_MODULE
    if root == "torchmetrics" and last[:1].isupper() and "Collection" not in last:
        return ClassKind.TORCH_MODULE | ClassKind.METRIC
    if (
        qualname.startswith("torch.optim.")
        and ".lr_scheduler." not in qualname
        and last[:1].isupper()
    ):
        return ClassKind.OPTIMIZER
    return ClassKind.NONE


# torch's tensor classes (`torch.nn.Parameter` is under `torch.nn` but is no module): a project
# class deriving from one is a tensor, indexed on the device, not a module or a Python sequence.
TENSOR_CLASSES = frozenset(
    {
        "torch.Tensor",
        *(
            f"torch.nn.{package}{name}"
            for package in ("", "parameter.")
            for name in (
                "Parameter",
                "Buffer",
                "UninitializedParameter",
                "UninitializedBuffer",
            )
        ),
    }
)
# Of those, the ones a module registers (moved to the device with it).
_REGISTERED_TENSOR_CLASSES = frozenset(c for c in TENSOR_CLASSES if c != "torch.Tensor")


def _lightning_root_kind(qualname: str) -> ClassKind:
    root, _, _ = qualname.partition(".")
    if root in LIGHTNING_ROOTS and qualname.rsplit(".", 1)[-1] in (
        "LightningModule",
        "LightningDataModule",
        "Callback",
    ):
        return kind_of_external(qualname)
    return ClassKind.NONE


def _for_other_accelerator(fn: _Function) -> bool:
    """A function or method named for another accelerator, or of a class that is
    (`BCELossIPU.forward`): it runs there, not on a TPU, so it is never hot here."""
    return _named_for_other_accelerator(fn.summary.name, fn.summary.cls)


# Kept per name and class: the hot set asks it of every function it reaches, in every pass.
@lru_cache(maxsize=1 << 16)
def _named_for_other_accelerator(name: str, cls: str | None) -> bool:
    names = [name, *(cls or "").split(".")]
    return any(names_other_accelerator(name) for name in names if name)


def _root_phase(name: str) -> int:
    """0 for what trains, 1 for validation, 2 for evaluation and inference hooks."""
    if "test" in name or "predict" in name:
        return 2
    return 1 if "validation" in name else 0


# A route of a hot function: the phase of its root (_root_phase; 3 for loops off the TPU)
# and the literals its parameters hold that way ((name, type name, value), param_routes).
RouteKey = tuple[int, frozenset]
_ROUTE_CAP = 8
# A hook a base class defines is a root once per class that inherits it (what `self` is,
# `_root_receivers`) up to this many classes; past it, for any instance of the base.
_RECEIVER_CAP = 64
_ANY_RECEIVER: frozenset[str | None] = frozenset({None})


def dict_of(bindings: frozenset) -> dict[str, Any]:
    """A route's literals by parameter name."""
    return {name: value for name, _, value in bindings}


# The root of what a custom optimizer's `step()` reaches (`HotInfo.root`).
OPTIMIZER_STEP = "optimizer step"


def entry_reason(
    name: str,
    kind: ClassKind | None,
    hot_methods: frozenset[str],
    runs_by_name: Callable[[], bool] | None = None,
) -> str | None:
    """Why a function is hot on its own (an entry point), or None. `kind` is the kind of its
    class (None for a module-level function). `runs_by_name`: whether a LightningModule's
    own `*_step` method (`infer_step`, `shared_step`: not a hook Lightning calls) may run
    with no call the project resolves (ProjectModel._step_runs_by_name); None: it may."""
    if name in hot_methods:
        return name
    if kind is None:
        return None
    if name == "forward" or name in STEP_METHODS:
        return name
    if kind & (ClassKind.LIGHTNING_MODULE | ClassKind.LIGHTNING_DATAMODULE):
        if name in LIGHTNING_BATCH_HOOKS:
            return name
        if (
            name.endswith("_step")
            and not is_cold_name(name)
            and (runs_by_name is None or runs_by_name())
        ):
            return name
    if STEP_PART.search(name) and runs_by_name is not None and runs_by_name():
        # a library base's step calls it (a base whose kind the model does not know)
        return name
    if kind & ClassKind.CALLBACK and name in CALLBACK_BATCH_HOOKS:
        return name
    if kind & ClassKind.METRIC and name == "update":
        return "update"
    if kind & ClassKind.OPTIMIZER and name == "step":
        return OPTIMIZER_STEP  # `optimizer.step()` runs every training step
    return None


# --- values --------------------------------------------------------------------------------

# The kinds of values, from the most to the least informative for the host-sync rules.
KINDS = ("device", "cpu", "module", "numpy", "number", "host", "cpu_device", "unknown")
_HOSTLIKE = frozenset({"module", "numpy", "number", "host", "cpu_device"})


@dataclass(frozen=True)
class Value:
    """What an expression holds, as far as the model knows.

    kind: "device" (a torch tensor, on the accelerator as far as anyone knows), "cpu" (a
    torch tensor in host memory), "module" (an nn.Module or metric), "numpy", "number",
    "host" (another non-tensor value), "unknown". `mask`: a boolean tensor. `params`: the
    value also depends on these parameters of the function it is returned from.
    `elements`: a tuple's values. `cls`: the project class it is an instance of."""

    kind: str = "unknown"
    mask: bool = False
    params: frozenset[int] = frozenset()
    elements: tuple[Value, ...] | None = None
    cls: str | None = None
    tensor: bool = False  # surely a tensor (a torch function's result), whatever its params
    # A tensor placed with its parameters' tensors (`device=points.device`, a helper annotated
    # `-> Tensor`): on the CPU when they are CPU tensors, else on the device.
    placed: bool = False
    # A dict's known string keys and what each holds (`out["mse"] = chunked(...); return
    # out`), for reading one entry of what a helper returns.
    entries: tuple[tuple[str, Value], ...] | None = None
    # An instance of a schedule class outside the project (`CosineScheduler(...)` of a
    # package): the value at a step, `schedule[it]`, is a number (a learning rate, a weight
    # decay, a momentum), not a tensor.
    schedule: bool = False
    # A tensor made on (or moved to) the device its parameters name (`torch.as_tensor(y,
    # device=device)` with `device=None`): on the CPU when a call leaves them out or passes
    # None or the CPU, else on the device.
    param_device: bool = False

    def digest_text(self) -> str:
        inner = ",".join(e.digest_text() for e in self.elements) if self.elements else ""
        keyed = ",".join(f"{k}={v.digest_text()}" for k, v in self.entries) if self.entries else ""
        return (
            f"{self.kind}/{int(self.mask)}/{sorted(self.params)}/({inner})/{self.cls}"
            f"/{int(self.tensor)}/{int(self.placed)}"
            + (f"/{{{keyed}}}" if keyed else "")
            + ("/schedule" if self.schedule else "")
            + ("/param_device" if self.param_device else "")
        )

    def entry(self, key: str) -> Value | None:
        """What the dict holds at `key`, when its entries are known."""
        for k, v in self.entries or ():
            if k == key:
                return v
        return None


UNKNOWN_VALUE = Value()


def _join_keyed(a: str | None, b: str | None) -> str | None:
    """The join of two kinds of a keyed pipeline's entry: "" (nothing yet) below "cpu" and
    "host", below "unknown" (either), below None (on the device or not known)."""
    if a is None or b is None:
        return None
    if not a or a == b:
        return b
    return a if not b else "unknown"


# The class of a package outside the project that a call builds, named for a schedule of
# step-indexed numbers (`CosineScheduler`, `LinearSchedule`): `dinov2.utils.utils.
# CosineScheduler.__getitem__` reads a numpy array of rates. Not a project's class (its
# `__getitem__` is read like any other) and not a module-local name.
# Functions of a package outside the project that read the process group's size or this
# process's rank (`dinov2.distributed.get_global_size()`, `accelerate`'s helpers, a vendored
# `dist_utils`): Python ints, as torch.distributed's own are.
_PROCESS_COUNTS = frozenset(
    {
        "get_world_size",
        "get_global_size",
        "get_local_size",
        "get_rank",
        "get_global_rank",
        "get_local_rank",
    }
)
# At most this many rounds of the caller index's build (ProjectModel._build_callers): each
# resolves again only the functions whose resolutions asked for the index.
_CALLER_ROUNDS = 8

_SCHEDULE_CLASS = re.compile(r"^[A-Za-z_][\w.]*\.[A-Za-z_]\w*Schedul(?:e|er)$")


def combine_kinds(kinds: Iterable[str]) -> str:
    kinds = set(kinds)
    if not kinds:
        return "unknown"
    if "device" in kinds:
        return "device"
    if "unknown" in kinds:
        return "unknown"
    if "cpu" in kinds:
        return "cpu"
    hostlike = kinds & _HOSTLIKE
    if len(hostlike) == 1:
        return next(iter(hostlike))
    return "host" if hostlike else "unknown"


def _has_unknown(value: Value) -> bool:
    if value.elements is not None:
        return any(_has_unknown(e) for e in value.elements)
    return value.kind == "unknown" and not value.params and value.entries is None


def _presumed(value: Value, place: Value) -> Value:
    """The value with its unknown parts (not depending on parameters) replaced by `place`."""
    if value.elements is not None:
        return replace(value, elements=tuple(_presumed(e, place) for e in value.elements))
    if value.kind == "unknown" and not value.params and value.entries is None:
        return replace(place, mask=value.mask)
    return value


# The most classes an attribute may hold for its call to be read as any of theirs.
_MAX_HELD_CLASSES = 4


def combine_values(values: list[Value]) -> Value:
    if not values:
        return UNKNOWN_VALUE
    if len(values) == 1:
        return values[0]
    tuples = [v for v in values if v.elements is not None]
    if tuples and len(tuples) < len(values) and all(v.tensor for v in values if v.elements is None):
        # A tensor or a tuple (`return y` under one flag, `return y, bands` under another; a
        # sub-module whose class a flag picks): what the tensors are. Unpacked, element i
        # is a row of them (the tuple's elements are not followed: code that reads a value
        # as a tensor expects one).
        return combine_values([v for v in values if v.elements is None])
    kind = combine_kinds(v.kind for v in values)
    mask = all(v.mask for v in values)
    params = frozenset().union(*(v.params for v in values))
    lengths = {len(v.elements) if v.elements is not None else -1 for v in values}
    elements = None
    if -1 not in lengths:
        # Tuples of different lengths (`return a, b, c, d` under a flag, `return a, b`
        # otherwise): element i is what any tuple long enough holds there. Unpacking takes
        # element i only of a tuple that has it, so the shorter ones add nothing beyond it.
        elements = tuple(
            combine_values([v.elements[i] for v in values if len(v.elements or ()) > i])
            for i in range(max(lengths))
        )
    classes = {v.cls for v in values}
    tensor = all(v.tensor for v in values)
    placed = any(v.placed for v in values)
    cls = classes.pop() if len(classes) == 1 else None
    entries = None
    if all(v.entries for v in values):
        # the keys every dict has, each holding what any of them holds there
        shared = set.intersection(*({k for k, _ in v.entries or ()} for v in values))
        entries = tuple(
            (k, combine_values([e for v in values if (e := v.entry(k)) is not None]))
            for k in sorted(shared)
        )
    schedule = all(v.schedule for v in values)
    param_device = any(v.param_device for v in values)
    return Value(
        kind, mask, params, elements, cls, tensor, placed, entries or None, schedule, param_device
    )


def _asks_tensors(keywords: dict[str, Any] | None) -> bool:
    """Whether a call's keywords pass `return_tensors=` (or a `**` spread that may)."""
    return keywords is not None and bool({"return_tensors", "**"} & set(keywords))


def _part_of_param(atoms: list[Atom], index: int) -> bool:
    """`batch`, `batch["x"]`, `x` of `x, y = batch`: parameter `index` or an element of it,
    not a value computed from it (`batch.get("names")` may be anything the loader yields)."""
    if len(atoms) != 1:
        return False
    atom = atoms[0]
    while isinstance(atom, list) and atom:
        if atom[0] == "e" and len(atom[2]) == 1:
            atom = atom[2][0]
        elif atom[0] in ("k", "g") and len(atom[3]) == 1:
            atom = atom[3][0]  # what it is when no collate or record says otherwise
        else:
            break
    return isinstance(atom, list) and atom[:2] == ["p", index]


def _has_params(elements: tuple[Value, ...] | None) -> bool:
    """Whether any element of a tuple value (at any depth) depends on parameters."""
    return elements is not None and any(e.params or _has_params(e.elements) for e in elements)


def _unbound_device(value: Value | None) -> Value | None:
    """A tensor made on the device parameters name, used where no call binds them (inside
    a mask, a torch op, an element, a move): presumed on the device."""
    if value is not None and value.param_device and value.params:
        return Value("device", tensor=True)
    return value


def _without_params(value: Value) -> Value:
    """The value with no dependence on the parameters of the function it came from."""
    if value.param_device and value.params:
        # made on the device parameters name that nothing here binds: presumed the device
        return Value("device", tensor=True)
    if not value.params and value.elements is None and value.entries is None:
        return value
    elements = (
        tuple(_without_params(e) for e in value.elements) if value.elements is not None else None
    )
    entries = (
        tuple((k, _without_params(v)) for k, v in value.entries)
        if value.entries is not None
        else None
    )
    return replace(value, params=frozenset(), elements=elements, entries=entries)


@dataclass(frozen=True)
class HotInfo:
    """Why a function runs every step: the hook at the root of its chain, the call sites on
    the way (path, line), and the guards every such chain shares."""

    root: str
    name: str
    chain: tuple[tuple[str, int], ...] = ()
    guards: frozenset[str] = frozenset()
    # Set when the root is a hand-written training loop whose tensors go to CUDA or the CPU
    # (ProjectModel.off_tpu_loop): what it says about the loop's devices. Roots that train
    # on XLA spread first, so a function keeps it only when no such root reaches it.
    off_tpu: str | None = None

    def reason(self, own_path: str | None = None, base: str | None = None) -> str:
        """`training_step`, or "`helper` (called from training_step)", with the call sites
        when the chain crosses files: "(called from training_step via pkg/model.py:41)"."""
        if not self.chain:
            return self.root
        text = f"`{self.name}` (called from {self.root}"
        if any(path != own_path for path, _ in self.chain):
            sites = [f"{_display(path, base)}:{line}" for path, line in self.chain]
            if len(sites) > 3:
                sites = [sites[0], "…", *sites[-2:]]
            text += " via " + " → ".join(sites)
        return text + ")"


def namespace_names(path: str, module: str, levels: int = 3) -> list[str]:
    """Other names a module is imported by through folders without `__init__.py` (namespace
    packages): `pl_dalle/loader.py`, a module `loader` for the model, is `pl_dalle.loader` to a
    script beside `pl_dalle/`. Up to `levels` folders above the module's package root whose
    names are identifiers; folders that are packages themselves (an `__init__.py`: a
    namespace folder inside a package, `pkg/models/rl/common/base.py` with no
    `common/__init__.py` is `pkg.models.rl.common.base`) do not count against `levels`, and
    names rooted at a folder inside a package (`common.base`, `rl.common.base`) are none:
    only a folder outside every package is on `sys.path`'s side of the name."""
    parts = module.split(".")
    folder = os.path.dirname(os.path.abspath(path))
    # A relative path's packages are looked for up to the checked folder only (a project
    # checked inside another package's folder is still a root).
    local = None if os.path.isabs(path) else os.path.dirname(os.path.normpath(path))
    for _ in range(len(parts) - (0 if os.path.basename(path) == "__init__.py" else 1)):
        folder = os.path.dirname(folder)
        local = os.path.dirname(local) if local else local
    out = []
    prefix: list[str] = []
    left = levels
    while left > 0:
        name = os.path.basename(folder)
        if not name.isidentifier() or folder == os.path.dirname(folder):
            break
        prefix.insert(0, name)
        folder = os.path.dirname(folder)
        local = os.path.dirname(local) if local else local
        inside = local if local is not None else folder
        # Only a folder outside every package starts a name `import` can spell: one inside a
        # package (`pkg/data/validators/torch/` with no `__init__.py` in the last two) is a
        # namespace subpackage of it, `pkg.data.validators.torch`, never a top-level `torch`
        # that would shadow the library in every file of the run.
        # Namespace folders inside a package do not count either (`repo/__init__.py` with
        # `repo/models/mil/abmil/pl.py`, no `__init__.py` below the root, is
        # `repo.models.mil.abmil.pl` to a script beside `repo/`).
        if local == "" or not _in_package(inside):
            out.append(".".join([*prefix, *parts]))
            left -= 1
    return out


def _in_package(folder: str) -> bool:
    """Whether a folder is a package or a namespace folder inside one (never on `sys.path`).
    A relative folder is looked at up to the checked folder; an absolute one (whose checked
    folder is not known here) up to its parent only, so a project checked inside another
    package's folder (a fixture under `tests/`) keeps its own roots."""
    if os.path.isfile(os.path.join(folder, "__init__.py")):
        return True
    return _package_above(folder, 1 if os.path.isabs(folder) else 6)


def _package_above(folder: str, up: int = 6) -> bool:
    """Whether a folder above `folder` (within `up` levels, through folders whose names are
    identifiers) is a package: the namespace folders between are its subpackages."""
    for _ in range(up):
        parent = os.path.dirname(folder)
        if parent == folder or not os.path.basename(folder).isidentifier():
            return False
        folder = parent
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            return True
    return False


def _shared_prefix(a: str, b: str) -> int:
    """How many leading path characters two paths share."""
    try:
        return len(os.path.commonpath([a, b]))
    except ValueError:  # one relative, one absolute
        return 0


def _display(path: str, base: str | None) -> str:
    """A call site's path as findings show paths: relative to the project root, absolute
    outside it."""
    if base:
        try:
            relative = os.path.relpath(path, base).replace(os.sep, "/")
        except ValueError:
            return path
        return path if relative.startswith("..") else relative
    return Path(path).name


@dataclass
class _Class:
    module: ModuleSummary
    summary: ClassSummary
    gkey: str  # module-qualified name


@dataclass
class _Function:
    module: ModuleSummary
    summary: FunctionSummary
    gkey: str  # path:key
    owner: str | None  # gkey of the class whose method it is (through nesting)


_MISSING = object()
# Re-exports followed by a lookup (`from .a import X` in a package, and so on).
_MAX_LOOKUP_DEPTH = 12


class ProjectModel:
    """The model of a set of files. `hot_methods` are extra method names that run every
    step (the `hot-methods` setting)."""

    def __init__(
        self,
        summaries: Iterable[ModuleSummary],
        hot_methods: Iterable[str] = (),
        lightning_version: str = "2.6",
        configs: Iterable[ConfigFacts] = (),
    ) -> None:
        self.hot_methods = frozenset(hot_methods)
        self.lightning_version = lightning_version
        # What the project's YAML configs build (tpulint.analysis.config_facts).
        self.configs = list(configs)
        # The config sections the checked code spreads into a Trainer (`pl.Trainer(
        # **cfg.trainer)`: analysis.trainer_splats), set by the runner.
        self.trainer_splats: tuple[tuple[tuple[str, ...], str], ...] = ()
        self._scope: ProjectScope | None = None
        self.modules: dict[str, ModuleSummary] = {}  # by path
        # see _handed_on
        self._handed_on_elsewhere: tuple[frozenset[str], frozenset[str]] | None = None
        self.by_name: dict[str, list[ModuleSummary]] = {}
        self._roots: set[str] = set()  # the first part of every module name
        self.classes: dict[str, _Class] = {}
        self.functions: dict[str, _Function] = {}
        self._module_classes: dict[int, dict[str, _Class]] = {}
        self._module_functions: dict[int, dict[str, _Function]] = {}
        self._module_defs: dict[int, dict[str, _Function]] = {}  # module-level functions
        self._prefixes: dict[int, str] = {}  # a module's class keys start with it
        self._incremented: frozenset[str] | None = None  # see incremented
        for summary in summaries:
            self.add(summary)
        self._kinds: dict[str, ClassKind] = {}
        self._kinds_with_subclasses: dict[str, ClassKind] = {}  # see _kind_with_subclasses
        self._mro: dict[str, list[str]] = {}
        self._subclasses: dict[str, list[str]] | None = None
        self._hot: dict[str, HotInfo] | None = None
        self._computing_hot = False  # what hot code is, while it is being found
        self._unbuilt_classes: dict[str, str] = {}  # see ProjectScope.unbuilt
        # Torch module classes only the data pipeline calls (see _pipeline_modules), each
        # with the project classes the pipeline calls them through.
        self._pipeline_only: dict[str, set[str]] = {}
        # Function gkey -> its routes (param_routes): (phase of the root, the literals its
        # parameters hold on the way) -> the first chain that way; see _spread_hot.
        self._routes: dict[str, dict[RouteKey, HotInfo]] = {}
        # Function gkey -> the first chain through each call of it that reaches it, with the
        # literals that call passes the parameters its tests read (see `chains`).
        self._chains: dict[str, dict[tuple[int, tuple[str, int], frozenset], HotInfo]] = {}
        self._collapsed: set[str] = set()
        # Function gkey -> what `self` may be on the ways that make it hot (the `receiver` of
        # resolve_call; None: any instance of its class); see _spread_hot.
        self._receivers: dict[str, set[str | None]] = {}
        self._receiver_memo: dict[tuple[Any, ...], Any] = {}  # _receiver_targets
        # Function gkey -> what its loops that are training loops through what they call run
        # (ScopeFacts.call_loops, _steps_through).
        self._call_step_roots: dict[str, list[list[Any]]] = {}
        self._hot_roots: list[Any] | None = None  # see _root_candidates
        self._returns: dict[str, Value] = {}
        # The value questions in progress (returns, parameters, attributes, index uses): an
        # answer that used a cycle's stand-in is not kept (tpulint.analysis.recursion).
        self._recursion = Recursion()
        self._attributes: dict[tuple[str, str], Value | None] = {}
        self._attribute_class_cache: dict[tuple[str, str], list[str]] = {}
        self._table: dict[str, int] | None = None
        self._params: dict[tuple[str, int, bool, str | None, bool, int], Value | None] = {}
        self._caller_index: dict[str, list[tuple[_Function, Any, int]]] | None = None
        # While the index is built (_build_callers): the stand-in a resolution asking for it
        # gets, and whether the function being resolved asked.
        self._building_callers = False
        self._callers_stand_in: dict[str, list[tuple[_Function, Any, int]]] = {}
        self._callers_asked = False
        self._lightning_imported: set[str] | None = None
        self._lookups: dict[tuple[str, int], _Class | _Function | ModuleSummary | None] = {}
        # lookup's answers that did not meet the depth limit, with how deep they went.
        self._deep_lookups: dict[tuple[str, int], tuple[Any, int]] = {}
        # lookup's answers that met it, by the depth they were asked at (a cycle of
        # re-exports, `import torch` in a project package the model also names `torch`), with
        # the deepest depth they reached.
        self._cut_lookups: dict[tuple[str, int, int], tuple[Any, int]] = {}
        self._lookup_deepest = 0  # the deepest depth the lookup being answered reached
        self._lookup_cut = False  # whether it met the depth limit
        self._named: dict[tuple[str, int], ModuleSummary | None] = {}  # module_named's answers
        self._resolved: dict[tuple[Any, ...], list[_Function | _Class]] = {}  # resolve_call
        # the names the code and configs spell, and the endings `getattr(self, ...)` builds
        self._names_spelled: tuple[frozenset[str], tuple[str, ...]] | None = None

    # --- building ------------------------------------------------------------------------

    def add(self, summary: ModuleSummary) -> None:
        self.modules[summary.path] = summary
        self._incremented = None
        self._handed_on_elsewhere = None
        if summary.module is not None:
            self.by_name.setdefault(summary.module, []).append(summary)
            self._roots.add(summary.module.partition(".")[0])
            for alias in namespace_names(summary.path, summary.module):
                self.by_name.setdefault(alias, []).append(summary)
                # Imported by its namespace name: lookups of that root are project names.
                self._roots.add(alias.partition(".")[0])
        prefix = summary.module or summary.path
        if summary.module is not None and len(self.by_name.get(summary.module, ())) > 1:
            # Another file has the module's name (`pretrain.py` in several script folders):
            # its classes are keyed by path, so neither hides the other's.
            prefix = summary.path
        self._prefixes[id(summary)] = prefix
        classes: dict[str, _Class] = {}
        for cls in summary.classes:
            entry = _Class(summary, cls, f"{prefix}.{cls.qualname}")
            classes.setdefault(cls.qualname, entry)
            self.classes.setdefault(entry.gkey, entry)
        functions: dict[str, _Function] = {}
        defs: dict[str, _Function] = {}
        for fn in summary.functions:
            owner = None
            if fn.cls is not None and fn.cls in classes:
                owner = classes[fn.cls].gkey
            entry = _Function(summary, fn, f"{summary.path}:{fn.key}", owner)
            functions[fn.key] = entry
            self.functions[entry.gkey] = entry
            if fn.cls is None and fn.parent is None:
                defs[fn.name] = entry  # the last definition wins, as in Python
        # Nested functions belong to the class of their enclosing method.
        for entry in functions.values():
            parent = entry.summary.parent
            seen = 0
            while entry.owner is None and parent is not None and seen < 50:
                outer = functions.get(parent)
                if outer is None:
                    break
                if outer.owner is not None:
                    entry.owner = outer.owner
                parent = outer.summary.parent
                seen += 1
        self._module_classes[id(summary)] = classes
        self._module_functions[id(summary)] = functions
        self._module_defs[id(summary)] = defs

    def prefix(self, module: ModuleSummary) -> str:
        """What the keys of a module's classes start with: its module name, or its path when
        another file of the project has the same name."""
        return self._prefixes.get(id(module)) or module.module or module.path

    # --- name resolution -----------------------------------------------------------------

    def _script_sibling(self, name: str, near: ModuleSummary) -> ModuleSummary | None:
        """The module `import <name>` finds beside a script run as a file (`python
        src/train.py`): Python puts the script's own folder first on `sys.path`, so
        `from data import DM` in `src/train.py` is `src/data.py` even when `src/` is a
        package (where that file's module name is `src.data`)."""
        if "__main__" not in near.scope.uses:
            return None
        folder = os.path.dirname(near.path)
        relative = name.replace(".", "/")
        for candidate in (f"{relative}.py", f"{relative}/__init__.py"):
            found = self.modules.get(os.path.join(folder, candidate) if folder else candidate)
            if found is not None and found is not near:
                return found
        return None

    def _in_outer_package(self, name: str, near: ModuleSummary) -> list[ModuleSummary]:
        """The modules `import <name>` finds in a folder of the importing file's packages,
        nearest first: a repository whose root folder has an `__init__.py` names its modules
        `repo.src.data` to the model, while its code, run from that root (on `sys.path`),
        imports `src.data`; a script run from `repo/src/` imports `data`."""
        if not near.module:
            return []
        parts = near.module.split(".")
        for i in range(len(parts) - 1, 0, -1):
            found = self.by_name.get(".".join([*parts[:i], name]))
            if found:
                return found
        return []

    def _namespace_import(self, parts: list[str], near: ModuleSummary | None) -> bool:
        """Whether a dotted name starts with a module of a namespace package the importing
        file sees (`_in_namespace_package`)."""
        return near is not None and any(
            self.module_named(".".join(parts[:i]), near) is not None
            for i in range(2, len(parts) + 1)
        )

    def _in_namespace_package(self, name: str, near: ModuleSummary) -> list[ModuleSummary]:
        """The module `import a.b` finds in a folder `a/` without an `__init__.py` (a
        namespace package: `from model.heads import Head` of `model/heads.py`, whose module
        name to the model is `heads`), under the importing file's folder or the nearest of
        its parent folders that holds one."""
        relative = name.replace(".", "/")
        folder = os.path.dirname(near.path)
        own = True
        while True:
            # The file's own folder (a script's, on `sys.path`) and folders outside every
            # package: a folder inside one (`pkg/data/validators/` with no `__init__.py`) is
            # never on `sys.path`, so its `torch/` is no top-level `torch`.
            if own or not folder or not _in_package(folder):
                for candidate in (f"{relative}.py", f"{relative}/__init__.py"):
                    path = os.path.join(folder, candidate) if folder else candidate
                    found = self.modules.get(path)
                    if found is not None and found is not near:
                        return [found]
            own = False
            if not folder:
                return []
            parent = os.path.dirname(folder)
            if parent == folder:
                return []
            folder = parent

    def module_named(self, name: str, near: ModuleSummary | None = None) -> ModuleSummary | None:
        if near is not None and self.modules.get(near.path) is not near:
            return self._module_named(name, near)  # a module of another model (with_source)
        key = (name, id(near))
        found = self._named.get(key, _MISSING)
        if found is _MISSING:
            found = self._named[key] = self._module_named(name, near)
        return found  # type: ignore[return-value]

    def _module_named(self, name: str, near: ModuleSummary | None) -> ModuleSummary | None:
        if near is not None:
            sibling = self._script_sibling(name, near)
            if sibling is not None:
                return sibling
        found = self.by_name.get(name)
        if not found and near is not None:
            found = self._in_outer_package(name, near)
        if not found and near is not None and "." in name:
            found = self._in_namespace_package(name, near)
        if not found:
            return None
        if len(found) == 1 or near is None:
            return found[0]
        # The one nearest the importing file: in its folder, else sharing most of its path.
        here = os.path.dirname(near.path)
        return max(
            found,
            key=lambda c: (os.path.dirname(c.path) == here, _shared_prefix(c.path, near.path)),
        )

    def star_bindings(self, module: ModuleSummary) -> dict[str, str]:
        """What the module's `from m import *` of project modules bind to those modules'
        imports (`torch` where `utils` imports it), as Python binds them: the public names,
        or those `__all__` lists, also through their own star imports; the module's own
        top-level imports and definitions win."""
        out = self._star_bindings(module, set())
        defined = {f.name for f in module.functions if f.cls is None and f.parent is None}
        defined |= {c.name for c in module.classes if "." not in c.qualname}
        return {
            name: target
            for name, target in out.items()
            if name not in defined and name not in module.imports
        }

    def _star_bindings(self, module: ModuleSummary, seen: set[int]) -> dict[str, str]:
        seen.add(id(module))
        out: dict[str, str] = {}
        for star in module.scope.star_imports:
            source = self.module_named(star, module)
            if source is None or id(source) in seen:
                continue
            brought = {**self._star_bindings(source, seen), **source.imports}
            exports = source.exports
            for name, target in brought.items():
                public = not name.startswith("_") if exports is None else name in exports
                if public:
                    out.setdefault(name, target)
        return out

    def _inner_root(self, name: str, near: ModuleSummary | None) -> str | None:
        """The package of `near` that holds a module `name`, for `from metrics.utils import
        f` in `proj/models/net.py` where `proj/metrics/utils.py` exists: the project's scripts
        run from inside `proj/` (Python puts a script's folder first on `sys.path`), so its
        sibling packages are imported by their short names. The outermost such package."""
        if near is None or near.module is None:
            return None
        packages = near.module.split(".")
        if not near.is_package:
            packages = packages[:-1]
        for end in range(1, len(packages) + 1):
            prefix = ".".join(packages[:end])
            if f"{prefix}.{name}" in self.by_name:
                return prefix
        return None

    def lookup(
        self, qualified: str, near: ModuleSummary | None, depth: int = 0
    ) -> _Class | _Function | ModuleSummary | None:
        """What a qualified name (or `.name` of the module `near`) refers to in the project."""
        # Memoised: the calls of a module name the same things over and over, and the model
        # does not change once built (the caller index resolves every call). A question asked
        # from the top (`depth` 0) keeps its answer as found. Within a chain of re-exports the
        # answer depends on the depth only where the chain meets the depth limit: an answer
        # that did not is kept with how deep it went below where it was asked (`span`), and
        # given again wherever it would not meet the limit either.
        key = (qualified, id(near))
        if depth == 0:
            found = self._lookups.get(key, _MISSING)
            if found is not _MISSING:
                return found  # type: ignore[return-value]
        known = self._deep_lookups.get(key)
        if known is not None and depth + known[1] < _MAX_LOOKUP_DEPTH:
            if depth + known[1] > self._lookup_deepest:
                self._lookup_deepest = depth + known[1]
            if depth == 0:
                self._lookups[key] = known[0]
            return known[0]
        # An answer that met the limit depends on the depth it was asked at: kept by it, and
        # given again with the limit met and the depth it reached.
        cut_key = (qualified, id(near), depth)
        cut_known = self._cut_lookups.get(cut_key)
        if cut_known is not None:
            self._lookup_cut = True
            if cut_known[1] > self._lookup_deepest:
                self._lookup_deepest = cut_known[1]
            if depth == 0:
                self._lookups[key] = cut_known[0]
            return cut_known[0]  # type: ignore[no-any-return]
        outer_deepest, outer_cut = self._lookup_deepest, self._lookup_cut
        self._lookup_deepest, self._lookup_cut = depth, False
        try:
            found = self._lookup(qualified, near, depth)
        finally:
            deepest, cut = self._lookup_deepest, self._lookup_cut
            self._lookup_deepest = max(outer_deepest, deepest)
            self._lookup_cut = outer_cut or cut
        if depth == 0:
            self._lookups[key] = found
        if not cut:
            span = deepest - depth
            if known is None or span < known[1]:
                self._deep_lookups[key] = (found, span)
        else:
            self._cut_lookups[cut_key] = (found, deepest)
        return found

    def _lookup(
        self, qualified: str, near: ModuleSummary | None, depth: int
    ) -> _Class | _Function | ModuleSummary | None:
        if depth > self._lookup_deepest:
            self._lookup_deepest = depth
        if depth > _MAX_LOOKUP_DEPTH:
            self._lookup_cut = True
            return None
        if qualified.startswith("."):
            if near is None:
                return None
            return self._in_module(near, qualified[1:], depth)
        parts = qualified.split(".")
        # Outside the project's roots, `module_named` finds only a script's sibling or a
        # module of an outer package (memoised there).
        if (
            parts[0] not in self._roots
            and (near is None or self.module_named(parts[0], near) is None)
            and not self._namespace_import(parts, near)
        ):
            inner = self._inner_root(parts[0], near)
            if inner is None:
                return None  # outside the project (torch, numpy, ...): most names calls resolve
            return self._lookup(f"{inner}.{qualified}", near, depth + 1)
        for i in range(len(parts), 0, -1):
            module = self.module_named(".".join(parts[:i]), near)
            if module is not None:
                if i == len(parts):
                    if i > 1:
                        # `pkg.Model` where `pkg/__init__.py` does `from .Model import Model`:
                        # the package's attribute (the class) hides the submodule.
                        package = self.module_named(".".join(parts[:-1]), near)
                        if package is not None and package.is_package:
                            bound = self._in_module(package, parts[-1], depth + 1)
                            if bound is not None and bound is not module:
                                return bound
                    return module
                return self._in_module(module, ".".join(parts[i:]), depth)
        return None

    def _in_module(
        self, module: ModuleSummary, rest: str, depth: int
    ) -> _Class | _Function | ModuleSummary | None:
        first, _, tail = rest.partition(".")
        cls = self._module_classes[id(module)].get(first)
        if cls is not None:
            return self._in_class(cls, tail, depth) if tail else cls
        fn = self._module_defs[id(module)].get(first)
        if fn is not None:
            return None if tail else fn
        imported = module.imports.get(first)
        if imported is not None:
            return self.lookup(f"{imported}.{tail}" if tail else imported, module, depth + 1)
        for star in module.scope.star_imports:
            # `from .neighborlist import *` in a package's `__init__.py`.
            source = self.module_named(star, module)
            if source is not None and source is not module:
                if depth > self._lookup_deepest:
                    self._lookup_deepest = depth
                if depth >= _MAX_LOOKUP_DEPTH:
                    self._lookup_cut = True
                    continue
                found = self._in_module(source, rest, depth + 1)
                if found is not None:
                    return found
        if module.module is not None and module.is_package:
            return self.lookup(f"{module.module}.{rest}", module, depth + 1)
        return None

    def _in_class(self, cls: _Class, rest: str, depth: int) -> _Class | _Function | None:
        first, _, tail = rest.partition(".")
        if tail:
            nested = self.classes.get(f"{cls.gkey}.{first}")
            return self._in_class(nested, tail, depth + 1) if nested is not None else None
        nested = self.classes.get(f"{cls.gkey}.{first}")
        if nested is not None:
            return nested
        return self.find_method(cls.gkey, first)

    def resolve_class(self, dotted: str, near: ModuleSummary) -> _Class | None:
        found = self.lookup(dotted, near)
        return found if isinstance(found, _Class) else None

    # --- classes -------------------------------------------------------------------------

    def mro(self, gkey: str) -> list[str]:
        """The project classes `gkey` derives from, itself first (depth-first, left to
        right, each once: close to C3 for the hierarchies projects have)."""
        cached = self._mro.get(gkey)
        if cached is not None:
            return cached
        self._mro[gkey] = [gkey]  # cycles
        out = [gkey]
        cls = self.classes.get(gkey)
        if cls is not None:
            for base in cls.summary.bases:
                target = self.resolve_class(base, cls.module)
                if target is None:
                    continue
                for name in self.mro(target.gkey):
                    if name not in out:
                        out.append(name)
        self._mro[gkey] = out
        return out

    def external_bases(self, gkey: str) -> list[str]:
        """The qualified names of the bases outside the project, through the hierarchy."""
        out = []
        for name in self.mro(gkey):
            cls = self.classes.get(name)
            if cls is None:
                continue
            for base in cls.summary.bases:
                if self.resolve_class(base, cls.module) is None:
                    out.append(base.lstrip("."))
        return out

    def tensor_class(self, gkey: str) -> str | None:
        """For a project class deriving from a torch tensor class (directly or through
        project bases): "device" for a parameter or buffer, "unknown" for another tensor;
        None for any other class."""
        bases = set(self.external_bases(gkey))
        if bases & _REGISTERED_TENSOR_CLASSES:
            return "device"
        return "unknown" if bases & TENSOR_CLASSES else None

    def class_kind(self, gkey: str) -> ClassKind:
        cached = self._kinds.get(gkey)
        if cached is not None:
            return cached
        self._kinds[gkey] = ClassKind.NONE  # cycles
        kind = ClassKind.NONE
        for name in self.mro(gkey):
            # When Lightning's own source is part of the project, its LightningModule,
            # LightningDataModule and Callback are defined there from mixins: they are the
            # roots by name, whatever their bases say.
            kind |= _lightning_root_kind(name)
        for base in self.external_bases(gkey):
            kind |= kind_of_external(base)
        self._kinds[gkey] = kind
        return kind

    def find_method(self, class_gkey: str, name: str) -> _Function | None:
        for gkey in self.mro(class_gkey):
            cls = self.classes.get(gkey)
            if cls is None:
                continue
            key = cls.summary.methods.get(name)
            if key is not None:
                return self._module_functions[id(cls.module)].get(key)
        return None

    def subclasses(self, gkey: str) -> list[str]:
        """Every project class deriving from `gkey` (transitively)."""
        if self._subclasses is None:
            direct: dict[str, list[str]] = {}
            for name in self.classes:
                for base in self.mro(name)[1:]:
                    direct.setdefault(base, []).append(name)
            self._subclasses = direct
        return self._subclasses.get(gkey, [])

    def lightning_table(self) -> dict[str, int]:
        """Every qualified name (definitions and re-exports) that names a project class
        deriving from Lightning, torch.nn.Module or torchmetrics, with its kind: what the
        per-file analysis needs to know about classes defined elsewhere."""
        if self._table is not None:
            return self._table
        table: dict[str, int] = {}
        for gkey, cls in self.classes.items():
            if cls.module.module is None:
                continue
            kind = self.class_kind(gkey)
            if kind:
                table[gkey] = kind.value
                for alias in namespace_names(cls.module.path, cls.module.module):
                    table[f"{alias}.{cls.summary.qualname}"] = kind.value
        for module in self.modules.values():
            if module.module is None:
                continue
            for local, target in module.imports.items():
                found = self.lookup(target, module)
                if isinstance(found, _Class):
                    kind = self.class_kind(found.gkey)
                    if kind:
                        table[f"{module.module}.{local}"] = kind.value
        self._table = table
        return table

    def _imported_modules(self, module: ModuleSummary) -> list[ModuleSummary]:
        """The project modules `module` imports (a name's module, or the module it is taken
        from)."""
        out: list[ModuleSummary] = []
        for target in [*module.imports.values(), *module.scope.star_imports]:
            found = self.lookup(target, module)
            if isinstance(found, (_Class, _Function)):
                found = found.module
            if isinstance(found, ModuleSummary):
                out.append(found)
                continue
            parts = target.lstrip(".").split(".")
            for i in range(len(parts), 0, -1):
                source = self.module_named(".".join(parts[:i]), module)
                if source is not None:
                    out.append(source)
                    break
        return out

    def standalone(self, path: str) -> bool:
        """Whether the module at `path` is a program of its own: it imports no other module
        of the project and none imports it (an inference app beside the training code)."""
        module = self.modules.get(path)
        if module is None or any(m is not module for m in self._imported_modules(module)):
            return False
        return not any(
            imported is module
            for other in self.modules.values()
            if other is not module
            for imported in self._imported_modules(other)
        )

    def incremented(self, name: str) -> bool:
        """Whether any file of the project increments an attribute named `name` (`self.n +=
        1`, a callback's `pl_module.seen[split] += 1`): a counter a first-N guard bounds
        grows (guards.FIRST_N)."""
        if self._incremented is None:
            self._incremented = frozenset(
                name for module in self.modules.values() for name in module.incremented
            )
        return name in self._incremented

    def lightning_imported(self) -> set[str]:
        """The paths of the modules that define a Lightning class, and of every project module
        they import, directly or through others: code a Trainer may run. A module only other
        code imports (a DDP trainer of its own beside the Lightning one) is not among them."""
        if self._lightning_imported is not None:
            return self._lightning_imported
        start = {
            id(cls.module): cls.module
            for gkey, cls in self.classes.items()
            if self.class_kind(gkey).is_lightning
        }
        seen: dict[int, ModuleSummary] = {}
        stack = list(start.values())
        while stack:
            module = stack.pop()
            if id(module) in seen:
                continue
            seen[id(module)] = module
            targets = [*module.imports.values(), *module.scope.star_imports]
            for target in targets:
                found = self.lookup(target, module)
                if isinstance(found, (_Class, _Function)):
                    found = found.module
                if isinstance(found, ModuleSummary) and id(found) not in seen:
                    stack.append(found)
                # The module the name is taken from (`from pkg.data import X` runs
                # `pkg/data/__init__.py`, and what it imports), when X is defined elsewhere.
                parts = target.lstrip(".").split(".")
                for i in range(len(parts), 0, -1):
                    source = self.module_named(".".join(parts[:i]), module)
                    if source is not None:
                        if id(source) not in seen:
                            stack.append(source)
                        break
        self._lightning_imported = {m.path for m in seen.values()}
        return self._lightning_imported

    # --- calls ---------------------------------------------------------------------------

    def resolve_call(
        self,
        module: ModuleSummary,
        owner: str | None,
        form: str,
        target: str,
        virtual: bool = False,
        receiver: str | None = None,
    ) -> list[_Function | _Class]:
        """The project functions (or classes, for constructor calls) a call may run.
        `owner` is the class of the calling method; `virtual` adds overrides of a `self.m()`
        in subclasses (for reachability: a base class's step may call a subclass's hook).
        `receiver`: what `self` is known to be on the way that reached the calling method
        (see `_receiver_targets`): a class deriving from `owner` (an instance of it or of a
        subclass) or "=" and a class (an instance of that class exactly); a `self.m()` then
        runs the method that class's MRO finds (and, for a class, its subclasses'
        overrides), not every override below `owner`. None: any instance of `owner`.
        The list is shared between callers: read it, do not change it."""
        # Memoised: the hot set (twice), the scope's reach, the caller index and the values
        # resolve the same calls over and over. What a call resolves to depends only on the
        # model and on memoised answers (lookups, class hierarchies, the classes attributes
        # hold), except an answer that used a cycle's stand-in (see
        # tpulint.analysis.recursion): such an answer is not kept.
        if receiver is not None and form != "self":
            receiver = None  # only `self.m()` dispatches on the instance
        key = (id(module), owner, form, target, virtual, receiver)
        found = self._resolved.get(key)
        if found is not None:
            return found
        recursion = self._recursion
        outer = recursion.take_stand_in_flag()
        out = self._resolve_call(module, owner, form, target, virtual, receiver)
        used = recursion.take_stand_in_flag()
        recursion.restore_stand_in_flag(outer or used)
        if not used:
            self._resolved[key] = out
        return out

    def _resolve_call(
        self,
        module: ModuleSummary,
        owner: str | None,
        form: str,
        target: str,
        virtual: bool,
        receiver: str | None = None,
    ) -> list[_Function | _Class]:
        out: list[_Function | _Class] = []
        if form == "self":
            if owner is None:
                return out
            exact = receiver is not None and receiver.startswith("=")
            instance = receiver.lstrip("=") if receiver is not None else owner
            found = self.find_method(instance, target)
            if found is not None:
                out.append(found)
            else:
                # `self.loss_fn(...)` after `self.loss_fn = focal_loss`
                out.extend(self._assigned_callables(owner, target, ""))
                # For reach: `self.scaler(x)` after `self.scaler = Scaler()` runs the
                # instance's `__call__` (a torch module's `forward`). What the call returns is
                # left to the value analysis's own rules (a module's output is a tensor).
                # An attribute set to instances of several classes (`self.scaler =
                # MeanScaler()` / `RobustScaler()` by configuration) may run any of them.
                for cls_gkey in self._attribute_classes(owner, target) if virtual else ():
                    for found_call in self._instance_call(cls_gkey, "__call__"):
                        if found_call not in out:
                            out.append(found_call)
            if virtual and not exact:
                for sub in self.subclasses(instance):
                    cls = self.classes[sub]
                    key = cls.summary.methods.get(target)
                    if key is not None:
                        fn = self._module_functions[id(cls.module)].get(key)
                        if fn is not None and fn not in out:
                            out.append(fn)
            return out
        if form == "super":
            if owner is None:
                return out
            for gkey in self.mro(owner)[1:]:
                cls = self.classes.get(gkey)
                key = cls.summary.methods.get(target) if cls is not None else None
                if key is not None and cls is not None:
                    fn = self._module_functions[id(cls.module)].get(key)
                    if fn is not None:
                        out.append(fn)
                    break
            return out
        if form == "attr":
            if owner is None:
                return out
            attr, _, method = target.partition(".")
            classes = self._attribute_classes(owner, attr)
            if "." in method:
                # `self.metrics.buffer.append(...)`: the method of the project class the inner
                # attribute of each class the outer one holds is built from
                inner, _, method = method.partition(".")
                classes = [
                    held
                    for cls_gkey in classes
                    for held in self._attribute_classes(cls_gkey, inner)
                    if "." not in method
                ]
                if not classes:
                    return out
            elif not classes:
                return self._assigned_callables(owner, attr, method)
            found: list[_Function | _Class] = []
            for cls_gkey in classes:
                for fn in self._instance_call(cls_gkey, method or "__call__"):
                    if fn in found:
                        continue
                    found.append(fn)
                    if isinstance(fn, _Function) and fn.summary.abstract:
                        # `self.decoder.loss(...)` on a base whose `loss` only raises
                        # NotImplementedError: one of the subclasses' overrides runs (for
                        # reach and for what the call passes them).
                        for override in self._overrides(cls_gkey, fn.summary.name):
                            if override not in found:
                                found.append(override)
            return found
        if form in ("name", "inst"):
            found = self.lookup(target, module)
            if isinstance(found, (_Function, _Class)):
                out.append(found)
            elif found is None and target.endswith(".__call__"):
                cls = self.lookup(target[: -len(".__call__")], module)
                if isinstance(cls, _Class):
                    out.extend(self._instance_call(cls.gkey, "__call__"))
        return out

    def _assigned_callables(self, owner: str, attr: str, method: str) -> list[_Function | _Class]:
        """What `self.<attr>(...)` calls when the attribute was assigned a function or a class
        (`self.loss_fn = focal_loss`, `self.norm_cls = RMSNorm`)."""
        out: list[_Function | _Class] = []
        for gkey in self.mro(owner):
            cls = self.classes.get(gkey)
            if cls is None:
                continue
            refs = cls.module.scope.attribute_refs.get(cls.summary.qualname, {}).get(attr, ())
            for name in refs:
                found = self.lookup(name, cls.module)
                if isinstance(found, _Function) and not method:
                    out.append(found)
                elif isinstance(found, _Class):
                    out.extend(self._instance_call(found.gkey, method or "__call__"))
        return out

    def _attribute_classes(self, class_gkey: str, attr: str) -> list[str]:
        """The project classes whose instances `self.<attr>` may hold: each assignment of the
        class or its project bases apart (their combined value names no single class)."""
        key = (class_gkey, attr)
        cache = self._attribute_class_cache
        if key in cache:
            return cache[key]

        def compute() -> list[str]:
            out: list[str] = []
            assigned = False
            for gkey in self.mro(class_gkey):
                cls = self.classes.get(gkey)
                if cls is None:
                    continue
                assigned = assigned or attr in cls.summary.attributes
                for atom in cls.summary.attributes.get(attr) or ():
                    value = self.resolve_atoms([atom], cls.module, gkey, 0)
                    if value is not None and value.cls is not None and value.cls not in out:
                        out.append(value.cls)
            if not assigned and self._kind_with_subclasses(class_gkey) & ClassKind.LIGHTNING_MODULE:
                out = self._callback_stored_classes(attr)
            return out

        classes, keep = self._recursion.answer(("attribute classes", *key), compute, [])
        if keep:
            cache[key] = classes
        return classes

    def _callback_stored_classes(self, attr: str) -> list[str]:
        """The project classes Lightning callbacks' hooks build into `pl_module.<attr>`
        (`pl_module.meter = AverageMeter(...)` when an epoch starts), for a LightningModule
        that never assigns the attribute itself (ScopeFacts.module_stores)."""
        stores = self.__dict__.get("_module_store_index")
        if stores is None:
            # attr -> (module, stored name) in the modules' order: one pass over the modules
            # for every attribute asked, not one per question (hundreds on a large project).
            stores = {}
            for module in self.modules.values():
                for name, built in module.scope.module_stores.items():
                    stores.setdefault(name, []).extend((module, b) for b in built)
            self.__dict__["_module_store_index"] = stores
        out: list[str] = []
        for module, name in stores.get(attr, ()):
            found = self.lookup(name, module)
            if isinstance(found, _Class) and found.gkey not in out:
                out.append(found.gkey)
        return out

    def _overrides(self, class_gkey: str, name: str) -> list[_Function]:
        """The methods `name` that the project's subclasses of a class define."""
        out = []
        for sub in self.subclasses(class_gkey):
            cls = self.classes[sub]
            key = cls.summary.methods.get(name)
            fn = self._module_functions[id(cls.module)].get(key) if key is not None else None
            if fn is not None:
                out.append(fn)
        return out

    def _instance_call(self, class_gkey: str, method: str) -> list[_Function | _Class]:
        found = self.find_method(class_gkey, method)
        if (
            found is None
            and method == "__call__"
            and self.class_kind(class_gkey) & ClassKind.TORCH_MODULE
        ):
            found = self.find_method(class_gkey, "forward")
        return [found] if found is not None else []

    # --- scope -------------------------------------------------------------------------------

    @property
    def scope(self) -> ProjectScope:
        """What code trains on a TPU (tpulint.analysis.scope), computed on first use."""
        if self._scope is None:
            self._scope = ProjectScope(self, self.lightning_version)
        return self._scope

    # --- hot code ------------------------------------------------------------------------

    @property
    def hot(self) -> dict[str, HotInfo]:
        """Function gkey -> HotInfo for every function that runs every step."""
        if self._hot is None:
            self._computing_hot = True
            try:
                self._pipeline_only = self._pipeline_modules()
                self._hot = self._compute_hot_kept()
            finally:
                self._computing_hot = False
            # Classes nothing builds (ProjectScope.unbuilt, computed from what is hot): their
            # own methods stay hot (their findings are left out by the scope, with the
            # reason), but what only they call outside such classes is not reached through
            # them. The scope is asked once hot code is known, as everything else asks it.
            unbuilt = self.scope.unbuilt_classes()
            if unbuilt:
                self._unbuilt_classes = unbuilt
                self._computing_hot = True
                try:
                    self._hot = self._compute_hot_kept()
                finally:
                    self._computing_hot = False
        return self._hot

    def _compute_hot_kept(self) -> dict[str, HotInfo]:
        """The hot set, with the forwards of the pipeline-only module classes left out of the
        roots until what is hot may reach one of them (`_pipeline_kept`): then those classes
        are roots again and the set is computed anew."""
        while True:
            hot = self._compute_hot()
            kept = self._pipeline_kept(hot) if self._pipeline_only else set()
            if not kept:
                return hot
            for gkey in kept:
                self._pipeline_only.pop(gkey, None)

    def _instance_calls(self, fn: _Function) -> list[str]:
        """The attributes of its own instance a method calls as modules (`self.builder(x)`,
        `self.builder.forward(x)`; not a method of the class)."""
        out: list[str] = []
        if fn.owner is None:
            return out
        for call in fn.summary.calls:
            if call.form == "self" and self.find_method(fn.owner, call.target) is None:
                out.append(call.target)
            elif call.form == "attr":
                attr, _, method = call.target.partition(".")
                if method in ("forward", "__call__"):
                    out.append(attr)
        return out

    def _module_classes_of(self, owner: str, attr: str) -> list[str]:
        return [
            gkey
            for gkey in self._attribute_classes(owner, attr)
            if self.class_kind(gkey) & ClassKind.TORCH_MODULE
        ]

    def _pipeline_modules(self) -> dict[str, set[str]]:
        """The torch module classes whose instances the data pipeline calls: an attribute of a
        Dataset, a DataModule, a sampler or collator, or of a data transform
        (ProjectScope.data_classes), typed or built as a project module class
        (`self.graph_builder = deepcopy(graph_builder)` of a parameter `graph_builder:
        GraphBuilder`, then `self.graph_builder(x)` in `__getitem__`), and what such classes'
        own methods call the same way (an edge builder the graph builder holds). Each class
        (the one called through and its subclasses) with the classes it is called through.
        Their `forward` runs in the loader's workers on host tensors, not every step on the
        device, unless what trains may call them too (`_pipeline_kept`). Not in a project
        that transforms batches on the device (`on_after_batch_transfer`), nor for a class
        with step methods of its own."""
        scope = self.scope
        on_device = scope._device_batch_transforms()
        data_classes = scope.data_classes()
        sources: list[tuple[str, str]] = []
        for fn in self.functions.values():
            if fn.owner is None or _is_test_path(fn.module.path):
                continue
            if fn.owner not in data_classes and not scope._data_node(fn.gkey):
                continue
            if fn.summary.name in LIGHTNING_BATCH_HOOKS or fn.summary.name in STEP_METHODS:
                continue  # runs on the device batch
            for attr in self._instance_calls(fn):
                sources += [(gkey, gkey) for gkey in self._module_classes_of(fn.owner, attr)]
        out: dict[str, set[str]] = {}
        while sources:
            through, _ = sources.pop()
            for gkey in (through, *self.subclasses(through)):
                if not self.class_kind(gkey) & ClassKind.TORCH_MODULE:
                    continue
                cls = self.classes[gkey]
                if any(self.find_method(gkey, name) is not None for name in STEP_METHODS):
                    continue
                if any(scope._same_project(cls.module.path, hook) for hook in on_device):
                    continue
                if gkey in out:
                    out[gkey].add(through)
                    continue
                out[gkey] = {through}
                functions = self._module_functions[id(cls.module)]
                for key in cls.summary.methods.values():
                    method = functions.get(key)
                    if method is None:
                        continue
                    for attr in self._instance_calls(method):
                        sources += [(g, g) for g in self._module_classes_of(gkey, attr)]
        return out

    def _reaches_pipeline(self, held: str, gkey: str) -> bool:
        """Whether an instance of class `held` (or of a subclass) may run the forward of the
        pipeline-only class `gkey`: `gkey` derives from it, or it inherits that forward. Not
        through a base above every class the pipeline calls `gkey` through (`self.backbone`
        typed as the project's base of all modules, the pipeline's `self.graph_builder` as
        the graph builders' base)."""
        through = self._pipeline_only.get(gkey)
        if through is None:
            return False
        if held in self.mro(gkey):
            return not all(held in self.mro(t)[1:] for t in through)
        forward = self.find_method(gkey, "forward")
        return forward is not None and self.find_method(held, "forward") is forward

    def _pipeline_kept(self, hot: dict[str, HotInfo]) -> set[str]:
        """The pipeline-only classes what trains may still call: code that runs every step
        calls or reads an attribute of its instance that may hold one (`self.graph_builder`
        of the model too), a class with hot code builds one in its methods, a config names one
        under the model."""
        held: set[str] = set()
        built: set[str] = set()
        owners: set[str] = set()
        for gkey in hot:
            fn = self.functions[gkey]
            if fn.owner is not None:
                owners.add(fn.owner)
                uses = fn.module.scope.uses.get(fn.summary.key, ())
                for use in uses:
                    if use[0] in ("self", "selfref"):
                        classes = self._attribute_classes(fn.owner, use[1])
                        passed = set() if classes else self._passed_classes(fn.owner, use[1])
                        if passed is None and use[0] == "self":
                            # a module handed to the class, of no known class, called every
                            # step: it may be any of them
                            return set(self._pipeline_only)
                        held.update(classes or passed or ())
                    elif use[0] == "attr":
                        held.update(self._attribute_classes(fn.owner, use[1].partition(".")[0]))
                for attr in self._instance_calls(fn):
                    held.update(self._attribute_classes(fn.owner, attr))
            else:
                built |= self._built_classes(fn)
        for owner in owners:
            cls = self.classes.get(owner)
            if cls is None or owner in self._pipeline_only:
                continue
            functions = self._module_functions[id(cls.module)]
            for key in cls.summary.methods.values():
                method = functions.get(key)
                if method is not None:
                    built |= self._built_classes(method)
        for config in self.configs:
            for path, name in config.classes:
                if path.split(".", 1)[0] in ("model", "module", "net", "network"):
                    found = self.lookup(name, None)
                    if isinstance(found, _Class):
                        built.add(found.gkey)
        kept = set()
        for gkey in self._pipeline_only:
            forward = self.find_method(gkey, "forward")
            if any(self._reaches_pipeline(h, gkey) for h in held) or any(
                gkey in self.mro(b) or self.find_method(b, "forward") is forward for b in built
            ):
                kept.add(gkey)
        return kept

    def _passed_classes(self, owner: str, attr: str) -> set[str] | None:
        """The project classes of what the project's constructions of the class pass the
        `__init__` parameter it stores as `self.<attr>` (`Net(KnnBuilder(...))` in a function);
        None when one is not known (a construction at a script's top level, in a config, a
        value of no known class, none seen): it may be any module. Empty when the attribute
        is no such parameter."""
        init = self.find_method(owner, "__init__")
        cls = self.classes.get(init.owner) if init is not None and init.owner else None
        index = cls.summary.param_attributes.get(attr) if cls is not None else None
        if init is None or cls is None or index is None:
            return set()
        name = init.summary.params[index]
        out = set()
        for gkey in dict.fromkeys((owner, cls.gkey)):
            for caller, call in self._constructions(gkey):
                atoms = _passed(call.keywords, call.args, name, index - 1)  # `self`
                value = self.resolve_atoms(atoms, caller.module, caller.owner, 0) if atoms else None
                if value is None or value.cls is None:
                    return None
                out.add(value.cls)
        return out or None

    def _built_classes(self, fn: _Function) -> set[str]:
        out = set()
        for use in fn.module.scope.uses.get(fn.summary.key, ()):
            if use[0] == "name":
                found = self.lookup(use[1], fn.module)
                if isinstance(found, _Class):
                    out.add(found.gkey)
        return out

    def _compute_hot(self) -> dict[str, HotInfo]:
        hot: dict[str, HotInfo] = {}
        queue: deque[str] = deque()
        self._routes = {}
        self._chains = {}
        self._collapsed = set()
        self._receivers = {}
        self._call_step_roots = {}
        nested: dict[str, list[_Function]] = {}
        for fn in self.functions.values():
            parent = fn.summary.parent
            if parent is not None:
                nested.setdefault(f"{fn.module.path}:{parent}", []).append(fn)
        data_classes = self.scope.data_classes()
        # Training, validation, evaluation and inference, then hand-written loops that never
        # run on XLA (their devices are CUDA or the CPU): what those reach alone is off the
        # TPU path.
        roots: tuple[list[tuple[str, str]], ...] = ([], [], [], [])
        off_tpu: dict[str, str] = {}
        if self._hot_roots is None:
            self._hot_roots = self._root_candidates()
        for gkey, fn, reason, through_calls, phase, root_reason, devices in self._hot_roots:
            if reason == "forward" and (
                fn.owner in data_classes or fn.owner in self._pipeline_only
            ):
                continue  # a transform of the data pipeline: host tensors, per sample
            if through_calls:
                self._call_step_roots[gkey] = through_calls
            if phase is None:
                continue
            if devices is not None:
                off_tpu[gkey] = devices
            roots[phase].append((gkey, root_reason))
        # Training first, then validation, then evaluation and inference: a function reached
        # from several names the first that reaches it in its message (`called from
        # training_step`, not `from test_step`, for a sampler training also calls).
        for index, phase in enumerate(roots):
            for gkey, reason in phase:
                name = self.functions[gkey].summary.name
                root = HotInfo(reason, name, off_tpu=off_tpu.get(gkey))
                grew = self._add_receivers(hot, gkey, self._root_receivers(self.functions[gkey]))
                if gkey not in hot:
                    hot[gkey] = root
                    queue.append(gkey)
                elif grew:
                    queue.append(gkey)
                # Lightning (or a caller not seen) calls a root: no literal is known.
                if self._add_route(gkey, (index, frozenset()), root):
                    queue.append(gkey)
            self._spread_hot(hot, queue, nested)
        return hot

    def _root_candidates(
        self,
    ) -> list[tuple[str, _Function, str | None, list[Any], int | None, str, str | None]]:
        """Per function, what may make it a root of the hot set, the same in every pass of
        `_compute_hot` (which leaves out the forwards of the data pipeline's classes, that
        change between passes): the entry reason of its name and class, the calls of its loops
        that train through what they call (`_steps_through`), and the phase it is a root of
        (None: no root), why, and the devices of a loop that never runs on XLA. Computed once:
        the hot set is computed up to three times on a project with pipeline-only classes and
        classes nothing builds."""
        out: list[tuple[str, _Function, str | None, list[Any], int | None, str, str | None]]
        out = []
        for gkey, fn in self.functions.items():
            kind = None
            if fn.summary.cls is not None and fn.owner is not None:
                kind = self._kind_with_subclasses(fn.owner)
            elif fn.summary.cls is not None:
                kind = ClassKind.NONE
            reason = entry_reason(
                fn.summary.name, kind, self.hot_methods, partial(self._step_runs_by_name, fn)
            )
            first = reason
            through_calls = (
                [
                    use
                    for loop in fn.module.scope.call_loops.get(fn.summary.key, ())
                    if self._steps_through(fn, loop)
                    for use in loop
                ]
                if reason is None and fn.summary.key not in fn.module.scope.step_loops
                else []
            )
            if (
                reason is None
                and (fn.summary.key in fn.module.scope.step_loops or through_calls)
                and not is_pytest_test(fn.summary.name, fn.summary.cls)
            ):
                # A hand-written training loop (Fabric, torch_xla): it steps the optimizer.
                # A pytest test's loop (`def test_...` beside the library code) checks the
                # library on the host; it is not how the project trains.
                reason = f"{TRAINING_LOOP} `{fn.summary.name}`"
                devices = self.off_tpu_loop(fn)
                if devices is not None:
                    out.append((gkey, fn, first, through_calls, 3, reason, devices))
                    continue
            if reason is not None and not _for_other_accelerator(fn):
                phase = _root_phase(fn.summary.name)
                out.append((gkey, fn, first, through_calls, phase, reason, None))
            elif through_calls:
                out.append((gkey, fn, first, through_calls, None, "", None))
        return out

    def _steps_through(self, fn: _Function, loop: list[list[Any]], depth: int = 3) -> bool:
        """Whether a loop of `fn` that takes no optimizer step itself calls one that does,
        within `depth` calls (`agent.update(batch)`, whose method runs `self._losses(batch)`,
        a subclass's override calling `loss.backward()` and `self.opt.step()`): each turn of
        the loop is a training step, so it is a training loop."""
        frontier = [target for use in loop for target in self.scope.use_targets(fn.gkey, use[:2])]
        seen: set[str] = set()
        for _ in range(depth):
            following: list[_Function] = []
            for target in frontier:
                if target.gkey in seen or is_cold_name(target.summary.name):
                    continue
                seen.add(target.gkey)
                if target.summary.key in target.module.scope.stepping:
                    return True
                for call in target.summary.calls:
                    following.extend(
                        t
                        for t in self.resolve_call(
                            target.module, target.owner, call.form, call.target, virtual=True
                        )
                        if isinstance(t, _Function)
                    )
            frontier = following
        return False

    def _root_receivers(self, fn: _Function) -> set[str | None]:
        """What `self` is when Lightning (or a loop) calls the root `fn`: any instance of its
        class (None), unless a subclass defines the method again; then an instance of each
        class that runs this definition ("=" and the class: the hook of a base inherited by
        A and B is a root for an A and for a B, whose `self.m()` run their own `m`)."""
        owner = fn.owner
        if owner is None or fn.summary.parent is not None:
            return {None}
        subclasses = self.subclasses(owner)
        if not subclasses or len(subclasses) >= _RECEIVER_CAP:
            return {None}
        name = fn.summary.name
        users = [c for c in (owner, *subclasses) if self.find_method(c, name) is fn]
        if len(users) == len(subclasses) + 1:
            return {None}
        return {"=" + c for c in users}

    def _add_receivers(
        self,
        hot: dict[str, HotInfo],
        gkey: str,
        new: AbstractSet[str | None] | tuple[str | None, ...],
    ) -> bool:
        """Record what `self` may be in a function about to be reached; whether that widens
        what it reaches when it is hot already (None, any instance of its class, takes in
        every other): it is to be followed again."""
        known = self._receivers.get(gkey)
        if known is None:
            # Hot already with no receiver recorded: it was followed for any instance. Not
            # hot yet: it is followed as it becomes hot.
            self._receivers[gkey] = {None} if gkey in hot or None in new else set(new)
            return False
        if None in known or known.issuperset(new):
            return False
        if None in new:
            self._receivers[gkey] = {None}
        else:
            known.update(new)
        return gkey in hot

    def _bound_receiver(self, receiver: str, target: _Function | _Class) -> str | None:
        """What `self` is in `target`, run by a `self.m()` (or `super().m()`) of a method
        whose `self` is `receiver` (its class or a subclass): the same instance when `target`
        is a method of a class in its MRO (a base's `sample()` run from a step of A runs with
        `self` an A); otherwise any instance of the target's own class (an override of a
        subclass, an attribute's module)."""
        if not isinstance(target, _Function) or target.owner is None:
            return None
        cls = receiver.lstrip("=")
        if target.owner == cls:
            return receiver if receiver.startswith("=") else None
        return receiver if target.owner in self.mro(cls)[1:] else None

    def _receiver_targets(
        self, fn: _Function, form: str, target: str, receivers: tuple[str | None, ...]
    ) -> list[tuple[_Function | _Class, frozenset[str | None]]]:
        """What a call of `fn` may run, each with what `self` is in it, for each thing `self`
        may be in `fn` (resolve_call's `receiver`). Memoised per function, call and
        receivers as resolve_call is (shared: read the list, do not change it)."""
        if form not in ("self", "super") or fn.owner is None:
            receivers = ()
        key = (fn.gkey, form, target, receivers)
        found = self._receiver_memo.get(key)
        if found is not None:
            return found
        recursion = self._recursion
        outer = recursion.take_stand_in_flag()
        out = self._find_receiver_targets(fn, form, target, receivers)
        used = recursion.take_stand_in_flag()
        recursion.restore_stand_in_flag(outer or used)
        if not used:
            self._receiver_memo[key] = out
        return out

    def _find_receiver_targets(
        self, fn: _Function, form: str, target: str, receivers: tuple[str | None, ...]
    ) -> list[tuple[_Function | _Class, frozenset[str | None]]]:
        if not receivers:
            found = self.resolve_call(fn.module, fn.owner, form, target, virtual=True)
            return [(t, _ANY_RECEIVER) for t in found]
        order: list[_Function | _Class] = []
        index: dict[int, set[str | None]] = {}
        for receiver in receivers:
            for t in self.resolve_call(
                fn.module, fn.owner, form, target, virtual=True, receiver=receiver
            ):
                selves = index.get(id(t))
                if selves is None:
                    selves = index[id(t)] = set()
                    order.append(t)
                selves.add(self._bound_receiver(receiver or fn.owner, t))  # type: ignore[arg-type]
        return [(t, frozenset(index[id(t)])) for t in order]

    def _add_route(self, gkey: str, key: RouteKey, info: HotInfo) -> bool:
        """Record a route of a hot function; whether it is new, or reached under fewer
        guards than before (a route's guards are those every way along it shares). Past
        _ROUTE_CAP routes the function keeps one route per phase with no literal known (all
        its code reached)."""
        routes = self._routes.setdefault(gkey, {})
        if gkey in self._collapsed and key[1]:
            key = (key[0], frozenset())
        existing = routes.get(key)
        if existing is not None:
            if existing.guards <= info.guards:
                return False
            routes[key] = replace(existing, guards=existing.guards & info.guards)
            return True
        routes[key] = info
        if len(routes) > _ROUTE_CAP:
            plain: dict[RouteKey, HotInfo] = {}
            for (phase, _), route in routes.items():
                kept = plain.get((phase, frozenset()))
                plain[(phase, frozenset())] = (
                    route if kept is None else replace(kept, guards=kept.guards & route.guards)
                )
            self._routes[gkey] = plain
            self._collapsed.add(gkey)
        return True

    def _route_bindings(
        self,
        call: Any,
        target: _Function,
        offset: int,
        bindings: frozenset,
        decorated: bool = False,
    ) -> frozenset:
        """The literals the parameters of `target` that its tests read hold when `call`
        calls it on a route whose parameters hold `bindings`: what the call passes as a
        literal, a parameter of the caller passed on that holds one, a literal default the
        call leaves in place. Nothing when the call spreads arguments or a decorator may
        change what the function is given (`decorated`: read through any decorator, as
        the call passes them; only to name the chains that reach code, see `chains`)."""
        summary = target.summary
        passed = call.route_args
        if not summary.tested_params or "=" not in passed or "*" in passed:
            return frozenset()
        if not decorated and any(d not in SAFE_DECORATORS for d in summary.decorators):
            return frozenset()
        held = {name: value for name, _, value in bindings}
        positional = len(summary.params) - summary.kwonly
        out = []
        for name in summary.tested_params:
            if name not in summary.params:
                continue
            index = summary.params.index(name)
            if name in call.keywords:
                arg = passed.get(name)
            elif index < positional and 0 <= index - offset < len(call.args):
                arg = passed.get(str(index - offset))
            elif index - offset < 0:
                continue
            elif name in summary.literal_defaults:
                arg = ["l", summary.literal_defaults[name]]
            else:
                continue
            if arg is None:
                continue
            if arg[0] == "l":
                out.append((name, type(arg[1]).__name__, arg[1]))
            elif arg[0] == "p" and arg[1] in held:
                out.append((name, type(held[arg[1]]).__name__, held[arg[1]]))
        return frozenset(out)

    def routes(self, gkey: str) -> dict[RouteKey, HotInfo]:
        """The routes of a hot function (see _spread_hot)."""
        if self._hot is None:
            self.hot  # noqa: B018 (computes the routes)
        return self._routes.get(gkey, {})

    def chains(self, gkey: str) -> list[tuple[frozenset, HotInfo]]:
        """The first chain through each call that reaches a hot function, with the literals
        that call passes the parameters its tests read (what `_route_bindings` reads, through
        any decorator: `@typechecked` passes the arguments on), the earlier phases first,
        in the order they were found: the code under a test of a parameter is named by a
        chain through a call that can reach it (FileContext._route_view)."""
        if self._hot is None:
            self.hot  # noqa: B018 (computes the chains)
        found = self._chains.get(gkey, {})
        ordered = sorted(found.items(), key=lambda item: item[0][0])
        return [(key[2], info) for key, info in ordered]

    def shown_chain(self, gkey: str) -> HotInfo | None:
        """The chain to name for a hot function whose first chain starts in a class no code,
        config, registry, string or package export names (nor a subclass of it: `GCP` beside
        the `GCP2` and `GCP3` a config builds), when a call from a function the same hook
        makes hot through a class that is named reaches it too (the first such call, in the
        order of the caller index): what runs is named, not a variant nothing builds. None:
        its first chain."""
        memo: dict[str, HotInfo | None] = self.__dict__.setdefault("_shown_chains", {})
        if gkey in memo:
            return memo[gkey]
        memo[gkey] = None  # (a cycle of calls: its first chain)
        info = self.hot.get(gkey)
        found = None
        if info is not None and info.chain and not self._root_named(info.chain[0]):
            for caller, call, _ in self._callers().get(gkey, []):
                reach = self.hot.get(caller.gkey)
                if caller.gkey == gkey or reach is None or reach.root != info.root:
                    continue
                reach = self.shown_chain(caller.gkey) or reach
                site = (caller.module.path, call.line)
                if self._root_named(reach.chain[0] if reach.chain else site):
                    found = HotInfo(
                        info.root, info.name, (*reach.chain, site), info.guards, info.off_tpu
                    )
                    break
        memo[gkey] = found
        return found

    def _root_named(self, site: tuple[str, int]) -> bool:
        """Whether the function that makes the call at `site` (the root of a chain) is no
        method of a class that nothing names (see `shown_chain`)."""
        memo: dict[Any, bool] = self.__dict__.setdefault("_named_roots", {})
        if site in memo:
            return memo[site]
        module = self.modules.get(site[0])
        owner = None
        if module is not None:
            inner = None
            for fn in self._module_functions[id(module)].values():
                first, last = fn.summary.span
                if first <= site[1] <= last and (
                    inner is None or last - first < inner.summary.span[1] - inner.summary.span[0]
                ):
                    inner = fn
            owner = inner.owner if inner is not None else None
        named = owner is None or owner not in self.classes or self._class_named(owner)
        memo[site] = named
        return named

    def _class_named(self, gkey: str) -> bool:
        scope = self.scope
        tails = scope._string_tails()
        return any(
            scope._built_somewhere(c)
            or c in scope._configured_classes()
            or c in scope._exported()
            or self.classes[c].summary.name in tails
            for c in (gkey, *self.subclasses(gkey))
            if c in self.classes
        )

    def _in_unbuilt(self, fn: _Function) -> bool:
        owner = fn.owner
        while owner is not None:
            if owner in self._unbuilt_classes:
                return True
            owner = owner.rsplit(".", 1)[0] if "." in owner else None
        return False

    def _spread_hot(
        self, hot: dict[str, HotInfo], queue: deque[str], nested: dict[str, list[_Function]]
    ) -> None:
        """Make hot what the queued hot functions reach, until nothing new is reached."""
        while queue:
            gkey = queue.popleft()
            info = hot[gkey]
            fn = self.functions[gkey]
            # The routes that reach it: a call under a test of a parameter that every route's
            # literal makes false is not followed; what a route reaches carries the literals
            # its calls pass (param_routes).
            routes = self._routes.get(gkey) or {(_root_phase(info.root), frozenset()): info}
            # From a class nothing builds, only its own kind of code is followed (its methods,
            # another such class's): a helper it calls is not hot through it.
            sealed = bool(self._unbuilt_classes) and self._in_unbuilt(fn)
            # A training loop's own function runs every step only inside the loop: what it
            # calls before or after (setup, a final report) is not hot; its loop's calls are
            # followed below.
            loop_root = not info.chain and info.root.startswith(TRAINING_LOOP)
            # What `self` may be here (_receivers): a `self.m()` runs that instance's `m`.
            known = self._receivers.get(gkey)
            receivers: tuple[str | None, ...] = (
                (None,) if not known or None in known else tuple(sorted(filter(None, known)))
            )
            for call in () if loop_root else fn.summary.calls:
                live = list(routes.items())
                reach = info
                if call.conds:
                    live = [(k, r) for k, r in live if param_live(call.conds, dict_of(k[1]))]
                    if not live:
                        continue  # every route passes what makes its test false
                    # Under a test only some routes pass (`if dump_dir is not None:`, set
                    # only by a call under `if batch_idx == 0:`), the call runs as rarely as
                    # those routes: the guards they all share.
                    shared = frozenset.intersection(*(r.guards for _, r in live))
                    if not any(r.root == info.root for _, r in live):
                        # reached only on other hooks' routes: read as their code
                        first = min(live, key=lambda item: item[0][0])[1]
                        reach = HotInfo(
                            first.root, first.name, first.chain, info.guards | shared, info.off_tpu
                        )
                    elif not shared <= info.guards:
                        reach = replace(info, guards=info.guards | shared)
                # Read as the root hook sees them, so that a step-count guard and another
                # periodic guard on two calls of one helper are both rare (what they share).
                # A first-N guard is settled here: rare if the project grows its counter.
                call_guards = settle_first_n(frozenset(call.guards), self.incremented)
                edge_guards = effective(reach.guards | call_guards, reach.root)
                for target, selves in self._receiver_targets(fn, call.form, call.target, receivers):
                    if (
                        not isinstance(target, _Function)
                        or is_cold_name(target.summary.name)
                        or _for_other_accelerator(target)
                        or (sealed and not self._in_unbuilt(target))
                    ):
                        continue
                    site = (fn.module.path, call.line)
                    if self._add_receivers(hot, target.gkey, selves):
                        queue.append(target.gkey)
                    self._reach(hot, queue, target, reach, site, edge_guards)
                    bound = call.form in ("self", "super", "attr", "inst")
                    offset = (
                        1
                        if (bound and target.summary.bound)
                        or "classmethod" in target.summary.decorators
                        else 0
                    )
                    grew = False
                    for key, route in live:
                        passed = self._route_bindings(call, target, offset, key[1])
                        new = _route_into(
                            route, target, site, effective(route.guards | call_guards, route.root)
                        )
                        grew = self._add_route(target.gkey, (key[0], passed), new) or grew
                        if target.summary.tested_params:
                            if not passed and any(
                                d not in SAFE_DECORATORS for d in target.summary.decorators
                            ):
                                passed = self._route_bindings(call, target, offset, key[1], True)
                            chains = self._chains.setdefault(target.gkey, {})
                            chains.setdefault((key[0], site, passed), new)
                    if grew:
                        queue.append(target.gkey)
            for inner in nested.get(gkey, ()):
                if self._add_receivers(hot, inner.gkey, receivers):
                    queue.append(inner.gkey)
                self._reach(hot, queue, inner, info, None, info.guards)
                self._plain_routes(queue, inner, routes, None, info.guards)
            # What the step hands on runs in it too (`checkpoint(self._block, x)`,
            # `torch.vmap(loss_fn)`), and what a training loop's body calls runs every step.
            facts = fn.module.scope
            uses = (
                []
                if loop_root
                else [u for u in facts.uses.get(fn.summary.key, ()) if u[0] in ("ref", "selfref")]
            )
            uses += facts.step_uses.get(fn.summary.key, [])
            uses += self._call_step_roots.get(gkey, [])
            for use in uses:
                line = use[2] if len(use) > 2 else fn.summary.line
                if use[0] in ("self", "selfref") and fn.owner is not None:
                    found = self._receiver_targets(fn, "self", use[1], receivers)
                else:
                    found = [(t, _ANY_RECEIVER) for t in self.scope.use_targets(gkey, use[:2])]
                for target, selves in found:
                    if not isinstance(target, _Function):
                        continue
                    if is_cold_name(target.summary.name) or _for_other_accelerator(target):
                        continue
                    if sealed and not self._in_unbuilt(target):
                        continue
                    if self._add_receivers(hot, target.gkey, selves):
                        queue.append(target.gkey)
                    self._reach(hot, queue, target, info, (fn.module.path, line), info.guards)
                    self._plain_routes(queue, target, routes, (fn.module.path, line), info.guards)

    def _plain_routes(
        self,
        queue: deque[str],
        target: _Function,
        routes: dict[RouteKey, HotInfo],
        site: tuple[str, int] | None,
        guards: frozenset[str],
    ) -> None:
        """Routes for what a function hands on or nests: no literal known, and the guards
        the function itself is reached under (`guards`), whatever route it runs on."""
        grew = False
        for (phase, _), route in routes.items():
            if site is None:
                new = HotInfo(route.root, route.name, route.chain, guards, route.off_tpu)
            else:
                new = _route_into(route, target, site, guards)
            grew = self._add_route(target.gkey, (phase, frozenset()), new) or grew
        if grew:
            queue.append(target.gkey)

    def off_tpu_loop(self, fn: _Function) -> str | None:
        """Why a hand-written training loop never runs on XLA, or None: its module does not
        use torch_xla, and every place the module's code puts tensors or modules resolves to
        CUDA (`.cuda()`, `"cuda"`) or to a CUDA/MPS chain that ends in the CPU (`"cuda" if
        torch.cuda.is_available() else "cpu"`, held by a global, `args.device`, `self.device`
        or a parameter every call passes one, from a function or the `__main__` block). On a
        TPU host that is the CPU or nothing: no XLA device, no graph, no host sync. A device
        from a caller not seen, a config or an accelerator keeps the loop on the TPU path."""
        module = fn.module
        if any(q.split(".", 1)[0] == "torch_xla" for q in module.imports.values()):
            return None
        placements = [
            (other, placement)
            for other in self._module_functions[id(module)].values()
            for placement in other.summary.placements
        ]
        # Where the loop's class and its project bases put them too (`self.model =
        # build().to(self.device)` in a base experiment class of another module).
        for gkey in self.mro(fn.owner)[1:] if fn.owner is not None else ():
            base = self.classes.get(gkey)
            if base is None or base.module is module:
                continue
            for other in self._module_functions[id(base.module)].values():
                if other.owner == gkey:
                    placements += [(other, placement) for placement in other.summary.placements]
        if not placements:
            return None
        cuda = False
        for other, placement in placements:
            if placement == ["cuda"]:
                cuda = True
            elif not self._cpu_device(other, placement):
                return None
        return "CUDA" if cuda else "CUDA or the CPU"

    def _cpu_device(self, fn: _Function, atoms: list[Atom]) -> bool:
        """Whether a placement's device atoms resolve to a CUDA/MPS-or-CPU choice."""
        for atom in atoms:
            if atom == "cpu_device":
                continue
            if isinstance(atom, list) and atom[0] == "p":
                if self._passed_device(fn, atom[1], 0):
                    continue
                return False
            elif isinstance(atom, list) and atom[0] == "a" and fn.owner is not None:
                if self._helper_device_attribute(fn.owner, atom[1]):
                    continue
                value = self._constructed_attribute(fn.owner, atom[1])
            else:
                value = self.resolve_atoms([atom], fn.module, fn.owner, 0)
            if value is None or value.kind != "cpu_device" or value.params:
                return False
        return True

    def _helper_device_attribute(self, class_gkey: str, attr: str) -> bool:
        """Whether every store of `self.<attr>` in the class and its project bases is what a
        project function returns that gives a CUDA/MPS or CPU device on every return
        (`self.device = self._acquire_device()`, where `_acquire_device` returns
        `torch.device(f"cuda:{gpu}")` or `torch.device("cpu")`): on a TPU host, the CPU or
        nothing."""
        found = False
        for gkey in self.mro(class_gkey):
            cls = self.classes.get(gkey)
            atoms = cls.summary.attributes.get(attr) if cls is not None else None
            if cls is None or atoms is None:
                continue
            for atom in atoms:
                if not (isinstance(atom, list) and atom[:1] == ["c"] and len(atom) >= 3):
                    return False
                targets = self.resolve_call(cls.module, gkey, atom[1], atom[2], virtual=True)
                if not targets or not all(
                    isinstance(t, _Function) and t.summary.device_returns for t in targets
                ):
                    return False
                found = True
        return found

    def _passed_device(self, fn: _Function, index: int, depth: int) -> bool:
        """Whether every call of the project that passes parameter `index` of `fn` passes a
        CUDA/MPS-or-CPU device (there is at least one): calls from functions, passing their own
        parameters on, and calls from the module's top level (a `__main__` block)."""
        if depth > 4 or index >= len(fn.summary.params):
            return False
        name = fn.summary.params[index]
        sources: list[tuple[_Function | None, list[Atom]]] = []
        for caller, call, offset in self._callers().get(fn.gkey, []):
            passed = _passed(call.keywords, call.args, name, index - offset)
            if passed is None:
                return False  # a default, or spread: not visible
            sources.append((caller, passed))
        if fn.summary.cls is None and fn.summary.parent is None:
            for called, args, keywords in fn.module.top_calls:
                if called != fn.summary.name:
                    continue
                if name in keywords:
                    sources.append((None, keywords[name]))
                elif index < len(args):
                    sources.append((None, args[index]))
                else:
                    return False
        if not sources:
            return False
        for caller, atoms in sources:
            if caller is not None and len(atoms) == 1 and atoms[0][:1] == ["p"]:
                if not self._passed_device(caller, atoms[0][1], depth + 1):
                    return False
                continue
            owner = caller.owner if caller is not None else None
            value = self.resolve_atoms(
                atoms, fn.module if caller is None else caller.module, owner, 0
            )
            if value is None or value.kind != "cpu_device" or value.params:
                return False
        return True

    def _constructed_attribute(self, class_gkey: str, attr: str) -> Value | None:
        """What `self.<attr>` holds: for an `__init__` parameter stored as is (`self.device =
        device`), what every construction of the class in the project passes it."""
        init = self.find_method(class_gkey, "__init__")
        cls = self.classes.get(init.owner) if init is not None and init.owner else None
        index = cls.summary.param_attributes.get(attr) if cls is not None else None
        if init is None or index is None:
            return self.attribute_value(class_gkey, attr)
        name = init.summary.params[index]
        values: list[Value] = []
        for caller, call in self._constructions(init.owner or class_gkey):
            atoms = _passed(call.keywords, call.args, name, index - 1)  # `self`
            if atoms is None:
                return None
            value = self.resolve_atoms(atoms, caller.module, caller.owner, 0)
            if value is None:
                return None
            values.append(value)
        return combine_values(values) if values else None

    def _host_function_attribute(self, class_gkey: str, attr: str) -> bool:
        """Whether `self.<attr>` is only ever an `__init__` parameter stored as is whose
        default is a function of a host package (`self.loss = loss` of `loss=log_loss`),
        which no construction the project makes replaces: calling it gives host data (a
        numpy number), not a tensor."""
        init = self.find_method(class_gkey, "__init__")
        if init is None or init.owner is None:
            return False
        cls = self.classes.get(init.owner)
        index = cls.summary.param_attributes.get(attr) if cls is not None else None
        if cls is None or index is None or index >= len(init.summary.params):
            return False
        name = init.summary.params[index]
        if name not in init.summary.host_defaults:
            return False
        if cls.summary.attributes.get(attr) != ["unknown"]:
            return False  # assigned something else too
        for gkey in [*self.mro(class_gkey), *self.subclasses(class_gkey)]:
            other = self.classes.get(gkey)
            if gkey != init.owner and other is not None and attr in other.summary.attributes:
                return False
        return all(
            _passed(call.keywords, call.args, name, index - 1) is None
            for _, call in self._constructions(init.owner)
        )

    def _constructions(self, class_gkey: str) -> list[tuple[_Function, Any]]:
        """The calls of the project that build the class (`Trainer(device, loader)`)."""
        index = self.__dict__.get("_construction_index")
        if index is None:
            index = {}
            for fn in self.functions.values():
                for call in fn.summary.calls:
                    for target in self.resolve_call(fn.module, fn.owner, call.form, call.target):
                        if isinstance(target, _Class):
                            index.setdefault(target.gkey, []).append((fn, call))
            self.__dict__["_construction_index"] = index
        return index.get(class_gkey, [])

    def _kind_with_subclasses(self, gkey: str) -> ClassKind:
        """A class's kind, with its project subclasses' (a mixin's `on_train_batch_end` is a
        hook of the LightningModules that derive from it). Kept per class: the hot set asks
        it of every method, in each of its passes."""
        kept = self._kinds_with_subclasses.get(gkey)
        if kept is not None:
            return kept
        kind = self.class_kind(gkey)
        if not kind & (ClassKind.LIGHTNING_MODULE | ClassKind.CALLBACK):
            for sub in self.subclasses(gkey):
                kind |= self.class_kind(sub)
        self._kinds_with_subclasses[gkey] = kind
        return kind

    @staticmethod
    def _reach(
        hot: dict[str, HotInfo],
        queue: deque[str],
        target: _Function,
        info: HotInfo,
        site: tuple[str, int] | None,
        guards: frozenset[str],
    ) -> None:
        existing = hot.get(target.gkey)
        if existing is None:
            if site is None:  # a nested function runs as part of its enclosing one
                new = HotInfo(info.root, info.name, info.chain, guards, info.off_tpu)
            else:
                new = HotInfo(
                    info.root, target.summary.name, (*info.chain, site), guards, info.off_tpu
                )
            hot[target.gkey] = new
            queue.append(target.gkey)
            return
        if existing.guards and not guards >= existing.guards:
            # Another call reaches it under fewer guards: keep only the shared ones. When the
            # first route reached it only on some steps (a training hook's periodic guard) and
            # this one on every step (a validation hook's call), this route is why it is hot:
            # its root and chain are the ones to name and to read the code as (validation code
            # that draws an image is not training code).
            root, name, chain = existing.root, existing.name, existing.chain
            if RARE in existing.guards and RARE not in guards:
                root, name = info.root, (info.name if site is None else target.summary.name)
                chain = info.chain if site is None else (*info.chain, site)
            hot[target.gkey] = HotInfo(
                root, name, chain, existing.guards & guards, existing.off_tpu
            )
            queue.append(target.gkey)

    # --- keyed pipelines: modules that pass one dict along -----------------------------------

    def _constructed_keys(self, owner: str) -> list[dict[str, str | None]] | None:
        """Per construction of `owner` by the project's code (not its tests): the string
        literal it passes for each parameter `__init__` stores on `self` (`Drop(key_in=
        "ids")` -> {"key_in": "ids"}; None for another value). None when the model may not
        see every construction: a subclass (its `super().__init__` passes its own keys), a
        call in an `__init__` or at module level or under another name (the file's count of
        calls of the class's name differs from the calls the functions show)."""
        cache: dict[str, Any] = self.__dict__.setdefault("_constructed_key_cache", {})
        if owner in cache:
            return cache[owner]
        cache[owner] = None
        cls = self.classes.get(owner)
        init = self.find_method(owner, "__init__")
        if cls is None or init is None or init.owner != owner or self.subclasses(owner):
            return None
        class_name = owner.rsplit(".", 1)[-1]
        found: list[dict[str, str | None]] = []
        seen: dict[str, int] = {}
        for caller, call in self._constructions(owner):
            if _is_test_path(caller.module.path):
                continue
            keys: dict[str, str | None] = {}
            for attr, index in cls.summary.param_attributes.items():
                if not 0 < index < len(init.summary.params):
                    continue
                name = init.summary.params[index]
                literal = call.literals.get(name, call.literals.get(str(index - 1)))
                keys[attr] = literal if isinstance(literal, str) else None
            found.append(keys)
            seen[caller.module.path] = seen.get(caller.module.path, 0) + 1
        for module in self.modules.values():
            if _is_test_path(module.path):
                continue
            if class_name in module.imports and not any(
                isinstance(t, _Class) and t.gkey == owner
                for t in self.resolve_call(module, None, "name", class_name)
            ):
                continue  # the name is another class here (`from tokenizers import ...`)
            if module.class_calls.get(class_name, 0) != seen.get(module.path, 0):
                return None
        cache[owner] = found or None
        return cache[owner]

    def _keyed_kinds(self) -> dict[str, str | None]:
        """Key -> what the project's keyed pipeline modules write there (see
        keyed_entry_kind): "cpu", "host", "unknown" (a mix of them), None (a device tensor,
        a value not known, or a writer whose keys are not all known). Worked out per
        construction (`Drop(key_in="ids", key_out="ids_aug")` writes at "ids_aug" what its
        forward computes from "ids"), to a fixed point from no key holding anything."""
        found = self.__dict__.get("_keyed_kind_index")
        if found is not None:
            return found
        self.__dict__["_keyed_kind_index"] = {}  # a question asked while working it out
        edges: list[tuple[_Function, dict[str, str | None], str | None, list[Atom]]] = []
        for fn in self.functions.values():
            if fn.owner is None or fn.summary.name != "forward" or not fn.summary.keyed_writes:
                continue
            built = self._constructed_keys(fn.owner)
            for attr, atoms in fn.summary.keyed_writes.items():
                for keys in built or [{}]:
                    edges.append((fn, keys, keys.get(attr) if built else None, atoms))
        kinds: dict[str, str | None] = {}
        unknowable = False
        for _ in range(8):
            changed = False
            for fn, keys, out, atoms in edges:
                if out is None:
                    unknowable = True  # a writer at a key the model cannot name
                    continue
                for atom in atoms:
                    kind = self._written_kind(atom, fn, keys, kinds)
                    if kind == "":
                        continue
                    joined = _join_keyed(kinds.get(out, ""), kind)
                    if joined != kinds.get(out, ""):
                        kinds[out] = joined
                        changed = True
            if not changed:
                break
        else:
            kinds = {key: None for key in kinds}
        if unknowable:
            kinds = {key: None for key in kinds}
        self.__dict__["_keyed_kind_index"] = kinds
        return kinds

    def _written_kind(
        self, atom: Atom, fn: _Function, keys: dict[str, str | None], kinds: dict[str, str | None]
    ) -> str | None:
        """What a keyed pipeline's module writes, built with `keys`, when the keys hold
        `kinds`: "cpu" for a CPU tensor (a legacy torchtext field's `process` / `numericalize`
        with no device: `Field.process(batch, device=None)` builds its tensor on the host;
        torch's result of CPU entries, `x.clone()`, `torch.roll(x, 1)`), "host" for host
        data, "unknown" for a mix, "" for an entry nothing is known to be written at yet,
        None otherwise (a device tensor, a value not known)."""
        if isinstance(atom, list) and atom and atom[0] == "k" and str(atom[1]).startswith("@"):
            key = keys.get(atom[1][1:])
            if key is None:
                return None
            return kinds.get(key, "")
        if isinstance(atom, list) and atom and atom[0] in ("v", "x") and len(atom) > 1:
            result: str | None = ""
            for inner in atom[1:]:
                result = _join_keyed(result, self._written_kind(inner, fn, keys, kinds))
            return result
        if (
            isinstance(atom, list)
            and len(atom) == 4
            and atom[:2] == ["c", "attr"]
            and len(atom[3]) <= 1
            and fn.owner is not None
        ):
            attr, _, method = str(atom[2]).partition(".")
            if method in ("process", "numericalize"):
                built = None
                for gkey in self.mro(fn.owner):
                    cls = self.classes.get(gkey)
                    if cls is not None and attr in cls.summary.attributes:
                        built = cls.summary.attributes[attr]
                        break
                if built and all(
                    isinstance(b, list)
                    and b[:2] == ["c", "name"]
                    and str(b[2]).startswith("torchtext.")
                    and str(b[2]).endswith("Field")
                    for b in built
                ):
                    return "cpu"
        value = self.resolve_atoms([atom], fn.module, fn.owner, 0)
        if value is None or value.params or value.elements is not None:
            return None
        if value.kind == "cpu":
            return "cpu"
        return "host" if value.kind in ("host", "number", "numpy") else None

    def _keyed_pipeline_entry(self, atoms: list[Any], owner: str | None) -> bool:
        """Whether the atoms are entries of a keyed pipeline that keyed_entry_kind finds are
        neither device tensors nor CPU ones (`x = batch[self.key_in]`)."""
        return bool(atoms) and all(
            isinstance(a, list)
            and len(a) > 3
            and a[0] == "k"
            and isinstance(a[1], str)
            and a[1].startswith("@")
            and self.keyed_entry_kind(owner, a[1][1:]) == "unknown"
            for a in atoms
        )

    def keyed_entry_kind(self, owner: str | None, attr: str) -> str | None:
        """What a module's forward reads at `batch[self.<attr>]` of a keyed pipeline
        (modules built with key literals, `Drop(key_in="ids", key_out="ids")`, that pass one
        dict along, each writing its result at its output key): "cpu" when the project's
        modules write a CPU tensor at every key the reader is built with (a text field's
        `process(texts)` made on the host inside forward, and what the next modules compute
        from it before an embedding moves it to the device), "host" for host data,
        "unknown" for a mix of them. None otherwise: a key no module writes is the step's
        batch entry (on the device, as presumed), and so is one that a module writes from a
        device tensor or a value not known. Only when the model sees every construction of
        the reader and of the writers (_constructed_keys)."""
        if owner is None or self._computing_hot:
            return None
        built = self._constructed_keys(owner)
        if not built:
            return None
        kinds = self._keyed_kinds()
        result: str | None = ""
        for keys in built:
            key = keys.get(attr)
            if key is None or key not in kinds:
                return None
            result = _join_keyed(result, kinds[key])
        return result or None

    # --- what the batch transfer leaves on the host ----------------------------------------

    def batch_key_kind(self, key: str) -> str | None:
        """ "number" or "host" when every collate function of the project that builds `key` in
        its batch dict builds it from Python values (`"size": len(samples)`): Lightning's
        batch transfer moves only tensors and objects with a `.to` method
        (lightning/fabric/utilities/apply_func.py `move_data_to_device`), so the step reads
        them as they were built. None when no collate function builds the key or one
        builds it from a tensor or an unknown value. torch's `default_collate` turns
        numbers into tensors: only the project's own collate functions say this."""
        keys = self.__dict__.get("_batch_keys")
        if keys is None:
            found: dict[str, str] = {}
            # What the datasets' items hold at each key as built, and the classes (datasets)
            # that bring a collate method of their own (`collate_fn=data.collate_fn`): their
            # items reach the step through it, not through default_collate.
            items: dict[str, str] = {}
            collating: set[str] = set()
            for fn in self.functions.values():
                for name, kind in fn.summary.item_keys.items():
                    items[name] = merge_built_kinds(items.get(name, kind), kind)
                if fn.owner is not None and "collat" in fn.summary.name.lower():
                    collating.add(fn.owner)
            for fn in self.functions.values():
                if (
                    fn.summary.item_keys
                    and fn.owner is not None
                    and any(c in collating for c in self.mro(fn.owner))
                ):
                    continue
                for name, kind in fn.summary.built_keys.items():
                    if kind.startswith("items:"):
                        # `[x["n"] for x in items]`: a list of the items' numbers stays one
                        held = items.get(kind[len("items:") :])
                        kind = "host" if held in ("number", "host") else "tensor"
                    found[name] = merge_built_kinds(found.get(name, kind), kind)
            if "#?" in found:
                # a collate function returns a batch of positions not known (`return
                # default_collate(items)`): what no position of a batch holds is known
                found = {k: "tensor" if k.startswith("#") else v for k, v in found.items()}
            keys = {k: v for k, v in found.items() if v != "tensor"}
            self.__dict__["_batch_keys"] = keys
            self.__dict__["_built_batch_keys"] = set(found)
        if key in self.__dict__["_built_batch_keys"]:
            return keys.get(key)
        if key.startswith("#"):
            return None  # a position of a tuple batch no collate function returns
        return self._step_written_key(key)

    def _step_written_key(self, key: str) -> str | None:
        """ "cpu" when the functions that run every step and write `key` into a dict
        (`d["num_graphs"] = torch.tensor(graph.num_graphs)` in a helper that turns the moved
        batch into a dict) all write a CPU tensor made there without a device, and no collate
        function or dataset builds the key: the step reads it on the host, after Lightning's
        transfer. None while the code that runs every step is not known yet."""
        if self._hot is None or self._computing_hot:
            return None
        written = self.__dict__.get("_step_written")
        if written is None:
            written = {}
            hot = self._hot
            for gkey, fn in self.functions.items():
                if gkey not in hot:
                    continue
                for name, kind in fn.summary.written_keys.items():
                    written[name] = "cpu" if written.get(name, kind) == kind == "cpu" else "tensor"
            self.__dict__["_step_written"] = written
        return "cpu" if written.get(key) == "cpu" else None

    def record_attribute(self, name: str) -> str | None:
        """ "cpu" when every project class that sets `self.<name>` is a record Lightning's
        batch transfer leaves where it is (see `unmoved_record`): read from the step's batch,
        it is host data, a CPU tensor at most. "number" or "host" when the project's batch
        records declare `name` a Python value (see `_host_fields`). None otherwise."""
        declared = self._host_fields().get(name)
        if declared is not None:
            return declared
        if self._computing_hot:
            return None  # what the step builds is not known yet
        names = self.__dict__.get("_record_attributes")
        if names is None:
            built = self._constructed_classes()
            setters: dict[str, bool] = {}
            for gkey, cls in self.classes.items():
                unmoved = self.unmoved_record(gkey, built)
                for attr in cls.summary.attributes:
                    setters[attr] = setters.get(attr, True) and unmoved
            names = {attr for attr, unmoved in setters.items() if unmoved}
            self.__dict__["_record_attributes"] = names
        return "cpu" if name in names else None

    def _host_fields(self) -> dict[str, str]:
        """Field name -> "number"/"host" for the fields a batch record of the project declares
        with an annotation of a Python value (`batch_size: int`, `keys: List[str]` beside
        `inputs: torch.Tensor` in a dataclass, attrs or pydantic class that holds a tensor).
        Lightning's batch transfer moves a record's tensors only: a record with a `.to` gets
        that `.to` called, a dataclass is copied with `apply_to_collection` run on each field
        (lightning_utilities/core/apply_func.py:107-135), and what is not a tensor is returned
        as it is (:189-190); torch's `default_collate` cannot build such records (it raises on
        them), so the project's code built the instance and the field holds what the annotation
        says. Not a NamedTuple's fields: `default_collate` stacks a list of NamedTuples field by
        field, numbers into tensors. Only when no project class that may be a batch (not a
        Lightning class, module, metric, optimizer, dataset or sampler) declares `name`
        otherwise or sets `self.<name>` to anything but host values."""
        cached = self.__dict__.get("_host_field_kinds")
        if cached is not None:
            return cached
        declared: dict[str, set[str]] = {}
        blocked: set[str] = set()
        for gkey, cls in self.classes.items():
            if self.class_kind(gkey) != ClassKind.NONE or any(
                b.startswith("torch.utils.data.") for b in self.external_bases(gkey)
            ):
                continue  # a module, a callback, a dataset or sampler: never a batch
            record = self._tensor_record(gkey)
            for attr, kind in cls.summary.fields.items():
                if record and kind in ("number", "host"):
                    declared.setdefault(attr, set()).add(kind)
                else:
                    blocked.add(attr)
            for attr, atoms in cls.summary.attributes.items():
                if attr not in cls.summary.fields and not all_host(atoms):
                    blocked.add(attr)
        found = {
            attr: "number" if kinds == {"number"} else "host"
            for attr, kinds in declared.items()
            if attr not in blocked
        }
        self.__dict__["_host_field_kinds"] = found
        return found

    def _tensor_record(self, gkey: str) -> bool:
        """A record class that declares a tensor field (through its project bases), and is
        not a NamedTuple (see `_host_fields`)."""
        if any(b.rsplit(".", 1)[-1] == "NamedTuple" for b in self.external_bases(gkey)):
            return False
        return any(
            "tensor" in cls.summary.fields.values()
            for cls in (self.classes.get(name) for name in self.mro(gkey))
            if cls is not None
        )

    def _constructed_classes(self) -> dict[str, bool]:
        """Class gkey -> whether code that runs every step builds instances of it (False:
        built only elsewhere, in the data pipeline or setup)."""
        hot = self.hot
        built: dict[str, bool] = {}
        for gkey, fn in self.functions.items():
            for call in fn.summary.calls:
                if call.form != "name":
                    continue
                for target in self.resolve_call(fn.module, fn.owner, call.form, call.target):
                    if isinstance(target, _Class):
                        built[target.gkey] = built.get(target.gkey, False) or gkey in hot
        return built

    def unmoved_record(self, gkey: str, built: dict[str, bool]) -> bool:
        """Whether instances of the class stay on the host in a batch: Lightning moves a batch
        with `apply_to_collection(batch, _TransferableDataType, ...)`
        (lightning/fabric/utilities/apply_func.py:78-110), which calls `.to` on objects that
        have one (`_TransferableDataType.__subclasshook__`, :71-75) and goes into mappings,
        sequences, namedtuples and dataclasses (lightning_utilities/core/apply_func.py:
        101-187); any other object is returned as it is (:189-190). So: a plain class of the
        project (no base outside it but `object`/`ABC`), no `to` method, not a dataclass,
        built by the project (`built`) but never in code that runs every step (a step's
        own output record holds device tensors)."""
        if built.get(gkey, True):
            return False
        if self.class_kind(gkey) != ClassKind.NONE:
            return False
        if any(b not in ("object", "abc.ABC", "ABC") for b in self.external_bases(gkey)):
            return False
        for name in self.mro(gkey):
            cls = self.classes.get(name)
            if cls is not None and "to" in cls.summary.methods:
                return False
            if cls is not None and any(
                d.rsplit(".", 1)[-1] in ("dataclass", "define", "attrs", "frozen")
                for d in cls.summary.decorators
            ):
                return False
        return True

    # --- values --------------------------------------------------------------------------

    def return_value(self, gkey: str) -> Value:
        """What the function returns, resolved across the project (memoised)."""
        cached = self._returns.get(gkey)
        if cached is not None:
            return cached
        fn = self.functions.get(gkey)
        if fn is None:
            return UNKNOWN_VALUE
        value, keep = self._recursion.answer(
            ("return", gkey), lambda: self._return_value(fn), UNKNOWN_VALUE
        )
        if keep:
            self._returns[gkey] = value
        return value

    def _return_value(self, fn: _Function) -> Value:
        values = [self.resolve_atoms(atoms, fn.module, fn.owner, 0) for atoms in fn.summary.returns]
        values = [v for v in values if v is not None]
        if values:
            value = combine_values(values)
        elif fn.summary.returns or fn.summary.abstract:
            # (an abstract method only raises: what its overrides return is not None)
            value = UNKNOWN_VALUE
        else:
            value = Value("host")  # returns None
        annotation = (fn.summary.returns_annotation or "").replace(" ", "")
        if value.kind == "unknown" and value.elements is None:
            if annotation.endswith("Tensor") and value.params:
                # a tensor where the arguments it is computed from turn out to be (CPU
                # polylines in, CPU polylines out)
                value = Value("unknown", value.mask, value.params, tensor=True, placed=True)
            elif annotation.endswith("Tensor"):
                value = Value("device", value.mask, value.params)
            elif annotation in ("int", "float", "bool"):
                # a number, unless the body hands back what its arguments are (`return
                # (a - b).mean()` annotated `-> float`): a device tensor passed in gives a
                # device tensor out, whatever the annotation says
                value = Value("number", params=value.params)
        return value

    def param_value(
        self,
        gkey: str,
        index: int,
        _depth: int = 0,
        outside_tests: bool = False,
        leaving_out: str | None = None,
        per_step: bool = False,
        passing: bool = False,
    ) -> Value | None:
        """What the project's calls pass as parameter `index` of the function (None when no
        call of the project is seen, or a call does not pass it). Entry points are called by
        Lightning or torch, not by the project: None. `outside_tests`: the calls of the
        project's own code only (a test feeding a loss numpy arrays says little of what
        the training step feeds it). `leaving_out`: only the calls that leave that parameter
        to its default (what the function's `if p is None:` branch gets). `per_step`: only
        the calls from code that runs every step, when there are some (what a hot helper
        gets every step; an inference script's numpy arrays or its unknown values say
        nothing of that). `passing`: only the calls that pass it (what the function gets
        when it is not left to its default)."""
        # The depth is part of the question: an answer cut short at depth 5 is not the answer
        # to the same question asked at depth 0.
        key = (gkey, index, outside_tests, leaving_out, per_step, _depth, passing)
        if key in self._params:
            return self._params[key]
        result, keep = self._recursion.answer(
            ("param", *key),
            lambda: self._param_value(
                gkey, index, _depth, outside_tests, leaving_out, per_step, passing
            ),
            None,
        )
        if keep:
            self._params[key] = result
        return result

    def _param_value(
        self,
        gkey: str,
        index: int,
        _depth: int,
        outside_tests: bool,
        leaving_out: str | None,
        per_step: bool,
        passing: bool = False,
    ) -> Value | None:
        fn = self.functions.get(gkey)
        callers = self._callers().get(gkey, []) if fn is not None else []
        if fn is not None and passing and index < len(fn.summary.params):
            name_of = fn.summary.params[index]
            callers = [
                (caller, call, offset)
                for caller, call, offset in callers
                if _passed(call.keywords, call.args, name_of, index - offset) is not None
            ]
        if outside_tests:
            callers = [c for c in callers if not _is_test_path(c[0].module.path)]
        if per_step and not self._computing_hot:
            hot = self.hot
            callers = [c for c in callers if c[0].gkey in hot] or callers
        if fn is not None and leaving_out is not None and leaving_out in fn.summary.params:
            skipped = fn.summary.params.index(leaving_out)
            callers = [
                (caller, call, offset)
                for caller, call, offset in callers
                if leaving_out not in call.keywords and len(call.args) + offset <= skipped
            ]
        if fn is None or not callers or _depth > 4 or self._handed_on(fn):
            return None
        if fn.summary.kwargs and index == len(fn.summary.params) + 1:
            return self._keyword_values(fn, callers)
        name = fn.summary.params[index] if index < len(fn.summary.params) else None
        values: list[Value] = []
        for caller, call, offset in callers:
            atoms = _passed(call.keywords, call.args, name, index - offset)
            if atoms is None:
                if name is not None and self._spread_of_numbers(call, caller):
                    # `run(x, **self.step_kwargs)` where the mapping holds Python numbers
                    # only: the parameter gets one of them or its default, no tensor
                    values.append(Value("host"))
                    continue
                if (
                    per_step
                    and name in fn.summary.none_params
                    and not {"*", "**"} & set(call.keywords)
                    and not leaving_out
                ):
                    # It leaves the parameter to its default, None: no value of it (what
                    # the other calls pass says what it is when it is not None).
                    continue
                if name in fn.summary.tensor_params and self._spread_of_batch(call, caller):
                    # `self.model(**batch)` in a step: a parameter annotated as a tensor gets
                    # the batch's entry of that name (what the collate builds for the key,
                    # else a tensor Lightning moved to the device), or its default
                    kind = self.batch_key_kind(name)
                    values.append(Value(kind if kind is not None else "device"))
                    continue
                return None  # a default, or passed through *args: not visible
            value = self.resolve_atoms(atoms, caller.module, caller.owner, 0)
            if value is None:
                return None
            if value.param_device and value.params:
                # made on the device the caller's own parameters name: presumed the device
                value = Value("device", tensor=True)
            if (
                caller is fn
                and value.params
                and value.params <= {index}
                and value.kind in ("unknown", "number")
                and not value.elements
            ):
                # A recursive call passing this parameter on (`lpmv(l - 1, m, x)` in `lpmv`):
                # what the outer calls pass, shifted by numbers at most; they say what it is.
                continue
            if value.params:
                # The caller passes its own parameter on: what its callers pass, or for a
                # step method Lightning calls, its batch (device tensors).
                # A caller the framework calls (a metric's `update`, a `forward`): what the
                # project's tests pass it says little of what training passes.
                framework = outside_tests or self._framework_called(caller)
                inner = [
                    Value("device")
                    if (_part_of_param(atoms, p) or value.tensor)
                    and self._step_batch_param(caller, p)
                    else self.param_value(caller.gkey, p, _depth + 1, framework, per_step=per_step)
                    for p in value.params
                ]
                # A value the forward computes from its batch-named input (`data.pos[j] -
                # data.pos[i]`, an element of what a method builds from it): a tensor on the
                # device. Not the input's own entries and attributes, which may be records
                # of settings (`data.neighbor_list.get(name)` with its "order" and "rcut").
                inner = [
                    Value("device")
                    if v is None
                    and not _part_of_param(atoms, p)
                    and self._forward_batch_param(caller, p)
                    else v
                    for v, p in zip(inner, value.params, strict=True)
                ]
                if any(v is None for v in inner) and not value.placed:
                    return None
                # An unknown kind with parameters is what they turn out to be (as `call_value`
                # binds a callee's parameters).
                known = [Value(value.kind)] if value.kind != "unknown" else []
                found = [v for v in inner if v is not None]
                placed = value.placed
                # A mask of what its parameters turn out to be (`m.to(torch.bool)`, `x > 0`)
                # stays a mask when they turn out to be tensors.
                mask = value.mask and not value.elements
                value = combine_values([*known, *found])  # type: ignore[list-item]
                if mask and value.kind in ("device", "cpu", "unknown") and not value.elements:
                    value = Value(value.kind, True, value.params, None, value.cls, True)
                if placed and (value.kind != "cpu" or len(found) < len(inner)):
                    # placed beside tensors not known to be CPU ones: on the device
                    value = Value("device")
            values.append(value)
        return combine_values(values) if values else None

    def forwarded_optional(self, gkey: str, index: int, _depth: int = 0) -> bool:
        """Whether every call of the project's own code (not its tests) passes parameter
        `index` of the function a parameter of the caller's that defaults to None (or one
        that is itself so forwarded), whose calls the model does not see (a forward the
        module's `self(...)` runs): an optional setting as often as a tensor
        (`decode_step=None` handed down the stack, a loop counter only when sampling)."""
        fn = self.functions.get(gkey)
        if fn is None or _depth > 4 or index >= len(fn.summary.params):
            return False
        callers = [c for c in self._callers().get(gkey, []) if not _is_test_path(c[0].module.path)]
        if not callers:
            return False
        name = fn.summary.params[index]
        for caller, call, offset in callers:
            atoms = _passed(call.keywords, call.args, name, index - offset)
            # the parameter itself (`["none", p]` after an `if p is None:` test)
            passed = [a for a in atoms or () if a != "none"]
            if not (
                len(passed) == 1
                and isinstance(passed[0], list)
                and len(passed[0]) == 2
                and passed[0][0] == "p"
                and isinstance(passed[0][1], int)
            ):
                return False
            own = passed[0][1]
            params = caller.summary.params
            if own >= len(params):
                return False
            if params[own] in caller.summary.none_params:
                if self._callers().get(caller.gkey):
                    return False  # its calls are seen: they say what it is
                continue
            if not self.forwarded_optional(caller.gkey, own, _depth + 1):
                return False
        return True

    def called_every_step(self, gkey: str) -> bool:
        """Whether the function is called by the project's own code (not its tests) from code
        that runs every step, and from nowhere else: what those calls pass is what it gets
        in training (an inference script's calls, which say nothing of that, are none)."""
        if self._computing_hot:
            return False
        callers = [c for c in self._callers().get(gkey, []) if not _is_test_path(c[0].module.path)]
        hot = self.hot
        return bool(callers) and all(c[0].gkey in hot for c in callers)

    def _keyword_values(self, fn: _Function, callers: list[Any]) -> Value | None:
        """What the calls pass to `**kwargs` of `fn`: the values of their keywords that no
        named parameter takes (`logger.update(lr=lr, loss=loss.item())`), and a mapping of
        Python numbers spread (`**scalars`). None when a call spreads what the model cannot
        see, or a value depends on the caller's own parameters."""
        named = set(fn.summary.params)
        values: list[Value] = []
        for caller, call, _ in callers:
            if "*" in call.keywords:
                return None
            if "**" in call.keywords:
                if not self._spread_of_numbers(call, caller):
                    return None
                values.append(Value("host"))
            for keyword, atoms in call.keywords.items():
                if keyword in named or keyword in ("*", "**"):
                    continue
                value = self.resolve_atoms(atoms, caller.module, caller.owner, 0)
                if value is None:
                    continue  # `None` passed
                if value.params:
                    return None
                values.append(value)
        return combine_values(values) if values else None

    def _spread_of_numbers(self, call: Any, caller: _Function) -> bool:
        """Whether a call's one `**mapping` spread (and no `*args`) is a mapping of Python
        numbers and other host values only (a dict literal of hyper-parameters, a property
        returning one): the model's "host" of a container, never one holding tensors."""
        spread = call.keywords.get("**")
        if not spread or "*" in call.keywords:
            return False
        value = self.resolve_atoms(spread, caller.module, caller.owner, 0)
        return (
            value is not None
            and value.kind == "host"
            and value.elements is None
            and not value.params
            and not value.mask
        )

    def _spread_of_batch(self, call: Any, caller: _Function) -> bool:
        """Whether a call's one `**mapping` spread (and no `*args`) is the batch Lightning
        passes the calling step method (`self.model(**batch)` in `training_step`)."""
        spread = call.keywords.get("**")
        if not spread or "*" in call.keywords or len(spread) != 1:
            return False
        atom = spread[0]
        return (
            isinstance(atom, list)
            and len(atom) == 2
            and atom[0] == "p"
            and self._step_batch_param(caller, atom[1])
        )

    def _framework_called(self, fn: _Function) -> bool:
        """Whether a function is one the framework calls by itself (`training_step`,
        `forward`, a metric's `update`, a hook): entry_reason's functions."""
        kind = None
        if fn.summary.cls is not None:
            kind = self._kind_with_subclasses(fn.owner) if fn.owner else ClassKind.NONE
        runs = partial(self._step_runs_by_name, fn)
        return entry_reason(fn.summary.name, kind, self.hot_methods, runs) is not None

    def _step_runs_by_name(self, fn: _Function) -> bool:
        """Whether a LightningModule's own `*_step` method (`infer_step`, `shared_step`;
        Lightning calls only its step hooks) may run with no call the project resolves: no
        call resolves to it (`self.shared_step(batch)` in `training_step` reaches it as a
        helper), and its name is looked up by name: a string of the code or a config spells
        it (`getattr(self, "infer_step")`, `step_fn: infer_step`), `getattr(self, ...)` builds
        a name with its ending (`getattr(self, f"{stage}_step")`), or some code calls a method
        of that name on a value the model cannot resolve. A method nothing names runs only
        when called."""
        if self._callers().get(fn.gkey):
            return False
        part = STEP_PART.search(fn.summary.name) if not fn.summary.name.endswith("_step") else None
        if part is not None:
            # `_training_step_on_batch` in a class whose `training_step` comes from a base
            # outside the project (a library's LightningModule): the library's step calls it.
            return (
                fn.owner is not None
                and self.find_method(fn.owner, f"{part.group(1)}_step") is None
                and any(
                    base.split(".", 1)[0] not in ("lightning", "pytorch_lightning", "torch")
                    for base in self.external_bases(fn.owner)
                )
            )
        named = self._names_spelled
        if named is None:
            strings: set[str] = set()
            endings: set[str] = set()
            for module in self.modules.values():
                strings.update(module.scope.strings)
                endings.update(module.scope.self_lookups)
                for uses in module.scope.uses.values():
                    strings.update(u[1] for u in uses if u[0] == "meth")
            for config in self.configs:
                strings.update(config.words)
            named = self._names_spelled = (frozenset(strings), tuple(endings))
        name = fn.summary.name
        return name in named[0] or any(name.endswith(e) for e in named[1])

    def _step_batch_param(self, fn: _Function, index: int) -> bool:
        """Whether parameter `index` of `fn` is the batch Lightning passes a step method of a
        LightningModule (`training_step(self, batch, batch_idx)`): the step's tensors, on the
        device, as the rules take it inside the step itself (context.FileContext)."""
        summary = fn.summary
        if fn.owner is None or not summary.bound or not 0 < index < len(summary.params):
            return False
        kind = self._kind_with_subclasses(fn.owner)
        if not kind & ClassKind.LIGHTNING_MODULE:
            return False
        if summary.name not in STEP_METHODS:
            return False  # `streaming_step`, `shared_step`: the project calls them itself
        return index == 1 or summary.params[index] in BATCH_PARAMS

    def passes_record_attribute(self, gkey: str, index: int) -> bool:
        """Whether some call of the project passes parameter `index` of the function an
        attribute of a record (`batch.num_graphs`: a batch object's property may be a
        Python number, whatever its tensors are)."""
        fn = self.functions.get(gkey)
        if fn is None:
            return False
        name = fn.summary.params[index] if index < len(fn.summary.params) else None
        for _caller, call, offset in self._callers().get(gkey, []):
            atoms = _passed(call.keywords, call.args, name, index - offset)
            if atoms and any(isinstance(a, list) and a and a[0] == "g" for a in atoms):
                return True
        return False

    def passed_containers(self, gkey: str, index: int) -> Value | None:
        """What the elements are when every call of the project passes parameter `index` of
        the function a container it builds there (a list or tuple display, a comprehension, a
        dict) or a Python number, never a tensor whatever its annotation says (`n_t:
        torch.Tensor` given `[f.num_detected for f in frames]`): the elements' value,
        unknown when they are not known. None when a call passes anything else or none is
        seen."""
        fn = self.functions.get(gkey)
        callers = self._callers().get(gkey, []) if fn is not None else []
        if fn is None or not callers or self._handed_on(fn):
            return None
        name = fn.summary.params[index] if index < len(fn.summary.params) else None
        held: list[Value] = []
        for caller, call, offset in callers:
            atoms = _passed(call.keywords, call.args, name, index - offset)
            if not atoms:
                return None
            for atom in atoms:
                if atom in ("number", "none"):
                    # (not "host": `list(batch.values())` is one, with tensors in it)
                    continue
                if not (isinstance(atom, list) and atom[0] in ("s", "t")):
                    return None
                inner = atom[1:] if atom[0] == "t" else [atom[1]]
                for part in inner:
                    value = (
                        self.resolve_atoms(part, caller.module, caller.owner, 0) if part else None
                    )
                    if value is not None and value.params:
                        # computed from the caller's parameters: the step's batch is on the
                        # device (`[batch.sum(), batch.mean()]`), others not known here
                        on_device = value.tensor or value.kind in ("device", "unknown")
                        value = (
                            Value("device")
                            if on_device
                            and any(self._step_batch_param(caller, p) for p in value.params)
                            else UNKNOWN_VALUE
                        )
                    held.append(value if value is not None else UNKNOWN_VALUE)
        return combine_values(held) if held else Value("host")

    def _forward_batch_param(self, fn: _Function, index: int) -> bool:
        """Whether parameter `index` of `fn` is the batch-named input (`data`, `x`, `batch`)
        of a torch module's `forward` that runs every step and that no code of the project
        calls by name (`self.net(batch)` in the step reaches it through `__call__`): the
        step's tensors, on the device, as the rules take it inside that forward."""
        summary = fn.summary
        if summary.name != "forward" or fn.owner is None or not summary.bound:
            return False
        if not 0 < index < len(summary.params) or summary.params[index] not in BATCH_PARAMS:
            return False
        if self._computing_hot or fn.gkey not in self.hot:
            return False
        if not self._kind_with_subclasses(fn.owner) & ClassKind.TORCH_MODULE:
            return False
        return not any(
            not _is_test_path(c[0].module.path) for c in self._callers().get(fn.gkey, [])
        )

    def precompute_callers(self) -> None:
        """Build the caller index now (before the hot set, which asks it, and before worker
        processes fork and inherit it)."""
        self._callers()

    def index_texts(self, gkey: str, _depth: int = 0) -> frozenset[str]:
        """The values the function uses as integer indices (tpulint.analysis.index_uses):
        in its own body, and what it passes to a project function that uses that parameter
        so (`self.sum_except_batch(err, lig_mask)` whose body scatters by it)."""
        cache: dict[tuple[str, int], frozenset[str]] = self.__dict__.setdefault("_index_texts", {})
        found = cache.get((gkey, _depth))
        if found is not None:
            return found
        fn = self.functions.get(gkey)
        if fn is None:
            return frozenset()
        own = frozenset(fn.summary.index_uses)
        if _depth > 4:
            return own

        def compute() -> frozenset[str]:
            texts = set(own)
            for call in fn.summary.calls:
                if not any(call.arg_texts) and not call.keyword_texts:
                    continue
                for target in self.resolve_call(fn.module, fn.owner, call.form, call.target):
                    if not isinstance(target, _Function):
                        continue
                    bound = call.form in ("self", "super", "attr", "inst")
                    offset = 1 if bound and target.summary.bound else 0
                    callee = self.index_texts(target.gkey, _depth + 1)
                    params = target.summary.params
                    for position, named in enumerate(call.arg_texts):
                        index = position + offset
                        if index < len(params) and params[index] in callee:
                            texts.update(named)
                    for name, named in call.keyword_texts.items():
                        if name in params and name in callee:
                            texts.update(named)
            return frozenset(texts)

        # The depth is part of the question (see param_value).
        result, keep = self._recursion.answer(("index texts", gkey, _depth), compute, own)
        if keep:
            cache[(gkey, _depth)] = result
        return result

    def index_param(self, gkey: str, index: int) -> bool:
        """Whether every call of the project passes parameter `index` of the function a value
        the calling function uses as an integer index (`xh_given_eps(z, eps, lig_mask)` from a
        function that scatters by `lig_mask`); False when no call is seen."""
        fn = self.functions.get(gkey)
        if fn is None or index >= len(fn.summary.params):
            return False
        name = fn.summary.params[index]
        callers = self._callers().get(gkey, [])
        if not callers:
            return False
        for caller, call, offset in callers:
            named = _passed(call.keyword_texts, call.arg_texts, name, index - offset)
            if named is None:
                return False
            if len(named) != 1 or named[0] not in self.index_texts(caller.gkey):
                return False
        return True

    def _handed_on(self, fn: _Function) -> bool:
        """Whether the project's code hands the function on as a value (a callback, an entry
        of a registry, `self.fn = f`: ModuleSummary.value_refs): calls the model does not
        see may pass it anything, so the seen calls do not say what it gets."""
        name = fn.summary.name
        refs = fn.module.value_refs
        method = fn.summary.cls is not None and fn.summary.parent is None
        if ("." + name if method else name) in refs:
            return True  # in its own file: `SCORERS = [score]`, `register(self.hook)`
        handed = self._handed_on_elsewhere
        if handed is None:
            handed = self._handed_on_elsewhere = self._imported_values()
        return fn.gkey in handed[0] or name in handed[1]

    def _imported_values(self) -> tuple[frozenset[str], frozenset[str]]:
        """The gkeys of the project functions other files hand on as values under the names
        they import (`from .panels import score`, `hooks = [score]`, `map(panels.score,
        xs)`), and the names of those whose import the model cannot follow (a function's own
        `import`): any project function of that name."""
        keys: set[str] = set()
        names: set[str] = set()
        for module in self.modules.values():
            for ref in module.value_refs:
                if not ref.startswith("@"):
                    continue
                root, _, rest = ref[1:].partition(".")
                qualified = module.imports.get(root)
                if qualified is None:
                    names.add(rest.rsplit(".", 1)[-1] if rest else root)
                    continue
                found = self.lookup(f"{qualified}.{rest}" if rest else qualified, module)
                if isinstance(found, _Function):
                    keys.add(found.gkey)
        return frozenset(keys), frozenset(names)

    def _callers(self) -> dict[str, list[tuple[_Function, Any, int]]]:
        """Callee gkey -> [(calling function, call site, argument offset)], resolved once."""
        index = self._caller_index
        if index is None:
            if self._building_callers:
                # A resolution during the build asks what the callers pass (a parameter a
                # method stores on `self`): the stand-in of a cycle, the index of the build's
                # round before (see _build_callers).
                self._callers_asked = True
                self._recursion.note_stand_in()
                return self._callers_stand_in
            index = self._caller_index = self._build_callers()
        return index

    def _build_callers(self) -> dict[str, list[tuple[_Function, Any, int]]]:
        """The caller index, built once and never inside itself. Resolving a call may ask
        what the callers of a method pass (`self.m(x)` after `def attach(self, m): self.m =
        m`): the index being built. Such a question gets the index of the round before (none
        in the first) as a cycle's stand-in, so no answer that used it is kept, and the
        functions whose resolutions asked are resolved again with the new index, until their
        entries stop changing: the index is then the one its own resolutions give. The build
        starts from no question (a Recursion of its own) and without the hot set (a
        parameter's per-step callers are all its callers, as while the hot set is found), so
        it is the same index whenever it is first asked for."""
        outer_recursion, outer_hot = self._recursion, self._computing_hot
        self._recursion = Recursion()
        self._computing_hot = True
        self._building_callers = True
        self._callers_stand_in = {}
        entries: dict[int, list[tuple[str, tuple[_Function, Any, int]]]] = {}
        try:
            pending = list(self.functions.values())
            rounds = 0
            while True:
                again = []
                changed = False
                for fn in pending:
                    self._callers_asked = False
                    found = self._caller_entries(fn)
                    if self._callers_asked:
                        again.append(fn)
                        before = entries.get(id(fn))
                        changed = changed or before is None or not _same_entries(before, found)
                    entries[id(fn)] = found
                index: dict[str, list[tuple[_Function, Any, int]]] = {}
                for fn in self.functions.values():
                    for gkey, entry in entries[id(fn)]:
                        index.setdefault(gkey, []).append(entry)
                rounds += 1
                if not again or (rounds > 1 and not changed) or rounds >= _CALLER_ROUNDS:
                    break
                self._callers_stand_in = index
                pending = again
        finally:
            self._recursion, self._computing_hot = outer_recursion, outer_hot
            self._building_callers = False
            self._callers_stand_in = {}
        return index

    def _caller_entries(self, fn: _Function) -> list[tuple[str, tuple[_Function, Any, int]]]:
        """The caller index's entries of the calls in a function: (callee gkey, (fn, call,
        argument offset))."""
        entries = []
        functions = self._module_functions[id(fn.module)]
        for call in fn.summary.calls:
            targets = self.resolve_call(fn.module, fn.owner, call.form, call.target)
            if not targets and call.form == "name":
                # A function nested in the caller (`def filter_ids(ids): ...`).
                inner = functions.get(f"{fn.summary.qualname}{call.target}#0")
                targets = [inner] if inner is not None else []
            elif not targets and call.form == "self":
                # `self.encoder(x, n)` on a sub-module attribute: its forward (what the project
                # passes it; reach follows the sub-module on its own).
                targets = self.resolve_call(fn.module, fn.owner, "attr", call.target)
                if not targets and fn.owner is not None:
                    # `self.set_input(batch)` in a base class that only its subclasses define:
                    # it runs their overrides, with these arguments.
                    targets = self._overrides(fn.owner, call.target)
            for target in targets:
                if not isinstance(target, _Function):
                    continue
                bound = call.form in ("self", "super", "attr", "inst")
                offset = (
                    1
                    if (bound and target.summary.bound)
                    or "classmethod" in target.summary.decorators
                    else 0
                )
                entries.append((target.gkey, (fn, call, offset)))
        return entries

    def _overrides(self, owner: str, name: str) -> list[_Function | _Class]:
        """The methods `name` the subclasses of the class define."""
        out: list[_Function | _Class] = []
        for sub in self.subclasses(owner):
            cls = self.classes[sub]
            key = cls.summary.methods.get(name)
            found = self._module_functions[id(cls.module)].get(key) if key is not None else None
            if found is not None and found not in out:
                out.append(found)
        return out

    def attribute_value(self, class_gkey: str, attr: str) -> Value | None:
        """What `self.<attr>` holds in instances of the class (None when no method of the
        class or its project bases assigns it)."""
        key = (class_gkey, attr)
        if key in self._attributes:
            return self._attributes[key]
        value, keep = self._recursion.answer(
            ("attribute", *key), lambda: self._attribute_value(class_gkey, attr), None
        )
        if keep:
            self._attributes[key] = value
        return value

    def _attribute_value(self, class_gkey: str, attr: str) -> Value | None:
        values: list[Value] = []
        for gkey in self.mro(class_gkey):
            cls = self.classes.get(gkey)
            if cls is None:
                continue
            atoms = cls.summary.attributes.get(attr)
            if atoms is not None:
                resolved = _unbound_device(self.resolve_atoms(atoms, cls.module, gkey, 0))
                if resolved is not None:
                    values.append(resolved)
        if not values:
            return self._property_value(class_gkey, attr)
        return combine_values(values) if values else None

    def attribute_is_metric(self, class_gkey: str, attr: str) -> bool:
        """Whether `self.<attr>` is a torchmetrics metric object by what its assignments say:
        every one an instance of a metric class, or a constructor parameter annotated with
        one (`self.auroc = auroc` of `auroc: WindowAUROC`, `class WindowAUROC(Metric)`: the
        parameter itself stays unknown to the value inference, its annotation says what it
        holds)."""
        found = False
        for gkey in self.mro(class_gkey):
            cls = self.classes.get(gkey)
            atoms = cls.summary.attributes.get(attr) if cls is not None else None
            for atom in atoms or ():
                if atom == "unknown":
                    continue
                if not (isinstance(atom, list) and atom[:1] == ["c"]):
                    return False
                value = self.resolve_atoms([atom], cls.module, gkey, 0)  # type: ignore[union-attr]
                if value is None or value.cls is None:
                    return False
                if not self.class_kind(value.cls) & ClassKind.METRIC:
                    return False
                found = True
        return found

    def made_classes(self, module: ModuleSummary, form: str, target: str) -> list[str]:
        """The project classes a constructor call names (`Frame()` of an annotation
        `frame: Frame`), through a package's lazy re-export too (`from pkg.io import Frame`
        where `pkg/io/__init__.py` imports it on first use in a module `__getattr__`): the
        one class of that name in the package's modules. Empty when the call names
        anything else."""
        targets = self.resolve_call(module, None, form, target)
        if targets:
            if all(isinstance(t, _Class) for t in targets):
                return [t.gkey for t in targets]
            return []
        package, _, name = target.rpartition(".")
        if form != "name" or not package or package.startswith("."):
            return []
        by_name = self.__dict__.get("_classes_by_name")
        if by_name is None:
            by_name = {}
            for gkey in self.classes:
                by_name.setdefault(gkey.rpartition(".")[2], []).append(gkey)
            self.__dict__["_classes_by_name"] = by_name
        found = [gkey for gkey in by_name.get(name, ()) if gkey.startswith(package + ".")]
        return found if len(found) == 1 else []

    def made_class_number(self, module: ModuleSummary, calls: list[Any], attr: str) -> bool:
        """Whether every one of the constructor calls (`["c", form, target, ...]` atoms)
        makes instances whose attribute `attr` is a Python number (class_number)."""
        for call in calls:
            if not (isinstance(call, list) and call[0] == "c"):
                return False
            classes = self.made_classes(module, call[1], call[2])
            if not classes or not all(self.class_number(c, attr) for c in classes):
                return False
        return bool(calls)

    def class_number(self, class_gkey: str, attr: str) -> bool:
        """Whether `x.<attr>` of an instance of the class (or of a subclass) is a Python
        number: an attribute every assignment of which is one, or a property whose getters
        return one (`return len(self.instances)`, `-> int`), never a tensor."""
        value = self.attribute_value(class_gkey, attr)
        return (
            value is not None
            and value.kind == "number"
            and not value.params
            and value.elements is None
            and not value.mask
        )

    def _property_value(self, class_gkey: str, attr: str) -> Value | None:
        """What `self.<attr>` gives when it is a property: what its getter returns, in the
        class and in every subclass that overrides it (an abstract getter says nothing)."""
        fn = self.find_method(class_gkey, attr)
        if fn is None or not any(
            d.rsplit(".", 1)[-1] in ("property", "cached_property") for d in fn.summary.decorators
        ):
            return None
        getters = [fn]
        for sub in self.subclasses(class_gkey):
            cls = self.classes.get(sub)
            key = cls.summary.methods.get(attr) if cls is not None else None
            override = self._module_functions[id(cls.module)].get(key) if key else None
            if override is not None:
                getters.append(override)
        concrete = [g for g in getters if not g.summary.abstract]
        if not concrete:
            return None
        return combine_values([self.return_value(g.gkey) for g in concrete])

    def resolve_atoms(
        self, atoms: list[Atom], module: ModuleSummary, owner: str | None, depth: int
    ) -> Value | None:
        """The value of a list of atoms (None when it is only `None`)."""
        if depth > 8:
            return UNKNOWN_VALUE
        values: list[Value] = []
        for atom in atoms:
            value = self._atom(atom, module, owner, depth + 1)
            if value is not None:
                values.append(value)
        if not values:
            return None
        return combine_values(values)

    def _keyed_entry(
        self, atom: list[Any], module: ModuleSummary, owner: str | None, depth: int
    ) -> Value | None:
        """Entry `atom[3]` of the dicts `atom[2]` holds, when every one of them is a dict
        whose entries are known and has that key; else None (any of its values)."""
        key = atom[3]
        found: list[Value] = []
        for inner in atom[2]:
            if isinstance(inner, list) and inner[0] == "s" and len(inner) > 3:
                held = [v for k, v in inner[3] if k == key]
                if not held:
                    return None
                value = self.resolve_atoms(held[0], module, owner, depth)
            else:
                whole = self.resolve_atoms([inner], module, owner, depth)
                value = whole.entry(key) if whole is not None else None
                if value is not None and value.params:
                    return None  # the callee's parameters, not bound here
            if value is None:
                return None
            found.append(value)
        return combine_values(found) if found else None

    def _stored_entry(self, owner: str | None, base: list[Any], key: str) -> Value | None:
        """A host value at string key `key` of a dict attribute, when every store of that
        entry in the class is one: `self.state["k"] = torch.tensor([0])`, the counters an
        optimizer keeps per parameter (`state = self.state[p]`, `state["step"] =
        torch.tensor(0.0)`), read in `step` as `self.state["k"]` or `state["step"]`. Only
        when the dict itself is never assigned but empty (`self.state` of
        `torch.optim.Optimizer`, `self.state = {}`): else None (what the reader says)."""
        named = entry_attribute(base, key) if owner is not None else None
        if named is None or owner is None:
            return None
        name, whole = named
        stored = self.attribute_value(owner, name)
        if (
            stored is None
            or stored.kind not in ("cpu", "number", "host", "numpy")
            or stored.params
            or stored.elements is not None
            or stored.entries is not None
        ):
            return None
        for gkey in self.mro(owner):
            cls = self.classes.get(gkey)
            held = cls.summary.attributes.get(whole) if cls is not None else None
            for inner in held or ():
                if not (
                    isinstance(inner, list)
                    and inner[0] == "s"
                    and not inner[1]
                    and (len(inner) < 4 or not inner[3])
                ):
                    return None  # the dict (or an entry) is assigned whole: unknown keys
        return stored

    def _atom(
        self, atom: Atom, module: ModuleSummary, owner: str | None, depth: int
    ) -> Value | None:
        if isinstance(atom, str):
            if atom == "none":
                return None
            if atom == "mask":
                return Value("device", mask=True)
            return Value(atom) if atom in KINDS else UNKNOWN_VALUE
        tag = atom[0]
        if tag == "p":
            return Value("unknown", params=frozenset({atom[1]}))
        if tag == "ap":
            return self._stored_param(owner, atom[1], atom[2])
        if tag == "ha":
            held = self.held_attribute(owner, atom[2], atom[1])
            return Value("cpu") if held == "cpu" else UNKNOWN_VALUE
        if tag == "a":
            if owner is None:
                return UNKNOWN_VALUE
            value = self.attribute_value(owner, atom[1])
            # The parameters an attribute's value depends on are those of the method that
            # assigned it (`self.factor = cfg.get(...)` in `__init__`), not the reader's.
            return _without_params(value) if value is not None else UNKNOWN_VALUE
        if tag == "t":
            elements = []
            for inner in atom[1:]:
                value = self.resolve_atoms(inner, module, owner, depth)
                elements.append(value if value is not None else Value("host"))
            return Value("host", elements=tuple(elements))
        if tag == "s":
            # A container: of device tensors as often as not (`{"loss": loss}`), unknown then;
            # one of CPU tensors, numbers or numpy values only (`sizes.append(len(c))`, a
            # list of `.cpu()` copies) is host data, its elements CPU tensors at most. Not
            # one of other host values: `list(batch.values())` is "host" with tensors in it.
            held = self.resolve_atoms(atom[1], module, owner, depth) if atom[1] else None
            entries = None
            if len(atom) > 3:
                # a returned dict with known keys: what each holds (`out["mse"]`)
                entries = tuple(
                    (key, self.resolve_atoms(inner, module, owner, depth) or Value("host"))
                    for key, inner in atom[3]
                )
            if (
                held is not None
                and held.elements is None
                and not held.params
                and held.kind in ("cpu", "number", "numpy")
            ):
                return Value("cpu" if held.kind == "cpu" else "host", entries=entries)
            return Value(entries=entries) if entries else UNKNOWN_VALUE
        if tag == "e" and len(atom) > 3:
            stored = self._stored_entry(owner, atom[2], atom[3])
            if stored is not None:
                return stored
            # `scores["mse"]`: the entry at that key of a dict with known entries
            found = self._keyed_entry(atom, module, owner, depth)
            if found is not None:
                return found
            if atom[3].startswith("."):
                return UNKNOWN_VALUE  # a field of a record whose fields are not known
        if tag == "e":
            inner = _unbound_device(self.resolve_atoms(atom[2], module, owner, depth))
            if inner is not None and inner.schedule:
                return Value("number")  # `lr_schedule[it]`: the rate at a step
            container = [a for a in atom[2] if isinstance(a, list) and a[0] == "s"]
            if container and len(container) == len(atom[2]):
                held = [a for c in container for a in c[1]]
                return self.resolve_atoms(held, module, owner, depth) if held else UNKNOWN_VALUE
            inner = _unbound_device(self.resolve_atoms(atom[2], module, owner, depth))
            if inner is None:
                return UNKNOWN_VALUE
            if inner.elements is not None:
                if 0 <= atom[1] < len(inner.elements):
                    return inner.elements[atom[1]]
                return combine_values(list(inner.elements))
            # Indexing a tensor gives a tensor (where it is: `o, o_b = self.dec(z)` of a
            # forward that returns one tensor); a parameter's element depends on the argument.
            return Value(
                inner.kind, inner.mask, inner.params, tensor=inner.tensor, placed=inner.placed
            )
        if tag == "k" and atom[1].startswith("@"):
            # `batch[self.key_in]`: the entry of a keyed pipeline (keyed_entry_kind)
            keyed = self.keyed_entry_kind(owner, atom[1][1:])
            if keyed:
                return Value(keyed)
            fallback = self.resolve_atoms(atom[3], module, owner, depth)
            return fallback if fallback is not None else UNKNOWN_VALUE
        if tag == "g" and len(atom) > 4 and self.made_class_number(module, atom[4], atom[1]):
            return Value("number")
        if tag in ("k", "g"):
            kind = self.batch_key_kind(atom[1]) if tag == "k" else self.record_attribute(atom[1])
            if kind is not None:
                return Value(kind)
            fallback = self.resolve_atoms(atom[3], module, owner, depth)
            return fallback if fallback is not None else UNKNOWN_VALUE
        if tag == "m":
            parts = [_unbound_device(self._atom(a, module, owner, depth + 1)) for a in atom[1:]]
            parts = [p for p in parts if p is not None]
            kind = combine_kinds(p.kind for p in parts) if parts else "unknown"
            if kind in _HOSTLIKE:
                return Value("number")
            params = frozenset().union(*(p.params for p in parts)) if parts else frozenset()
            # a mask of CPU tensors stays on the CPU (`torch.where(t > 0, ...)` of host data)
            placed = any(p.placed for p in parts)
            return Value(
                kind if kind in ("device", "cpu") else "unknown", True, params, placed=placed
            )
        if tag == "v":
            parts = [_unbound_device(self._atom(a, module, owner, depth + 1)) for a in atom[1:]]
            tensors = [p for p in parts if p is not None and p.kind not in _HOSTLIKE]
            if not tensors:
                return UNKNOWN_VALUE
            params = frozenset().union(*(p.params for p in tensors))
            placed = any(p.placed for p in tensors)
            kind = combine_kinds(p.kind for p in tensors)
            return Value(kind, False, params, tensor=True, placed=placed)
        if tag == "x":
            parts = [_unbound_device(self._atom(a, module, owner, depth + 1)) for a in atom[1:]]
            found = [p for p in parts if p is not None]
            kinds = {p.kind for p in found}
            if "device" in kinds:
                return Value("device")
            if "cpu" in kinds:
                return Value("cpu")
            # no CPU tensor among them: what any of them is (`a * b` of two parameters)
            return combine_values(found) if found else UNKNOWN_VALUE
        if tag == "w":
            if self._keyed_pipeline_entry(atom[1], owner):
                # `.to(x.device)` of a keyed pipeline's host-made entry: where x is
                return UNKNOWN_VALUE
            inner = _unbound_device(self.resolve_atoms(atom[1], module, owner, depth))
            if inner is not None and inner.params and inner.kind in ("unknown", "cpu"):
                # where the parameter's tensor turns out to be, once a call binds it
                return Value("unknown", params=inner.params, tensor=True, placed=True)
            return Value("cpu" if inner is not None and inner.kind == "cpu" else "device")
        if tag == "mv":
            inner = _unbound_device(self.resolve_atoms(atom[2], module, owner, depth))
            if inner is not None and (inner.kind == "module" or inner.cls is not None):
                return inner
            if inner is None or inner.kind == "unknown":
                if atom[1] == "cpu":
                    return Value("cpu")  # a tensor or a model: on the host either way
                return UNKNOWN_VALUE  # a tensor or a model: moving it says nothing
            return Value(atom[1])
        if tag == "md":
            place = self.resolve_atoms(atom[1], module, owner, depth)
            on_cpu = place is not None and place.kind == "cpu_device"
            if (
                place is not None
                and place.kind == "unknown"
                and place.params
                and place.elements is None
                and atom[2] == ["cpu"]
                and atom[3] == ["device"]
            ):
                # a tensor made on the device a parameter names: where the call puts it
                return Value("unknown", params=place.params, tensor=True, param_device=True)
            chosen = self.resolve_atoms(atom[2] if on_cpu else atom[3], module, owner, depth)
            return chosen if chosen is not None else UNKNOWN_VALUE
        if tag == "c":
            keywords = dict(atom[4]) if len(atom) > 4 else {}
            return self.call_value(module, owner, atom[1], atom[2], atom[3], depth, keywords)
        return UNKNOWN_VALUE

    def _stored_param(self, owner: str | None, method: str, index: int) -> Value:
        """What parameter `index` of the class's method `method` holds, for an attribute the
        method stores it (or an element of it) in: the step's batch for a step method
        Lightning calls, else what the calls from code that runs every step pass it (a
        `set_input(self, batch)` the step calls with its batch)."""
        fn = self.find_method(owner, method) if owner is not None else None
        if fn is None:
            return UNKNOWN_VALUE
        if self._step_batch_param(fn, index):
            return Value("device")
        value = self.param_value(fn.gkey, index, per_step=True)
        if value is None and fn.owner is not None:
            # An override the base class's own calls run (`self.set_input(batch)` in the
            # base's step, the subclass's `set_input` stores more of the batch).
            for base in self.mro(fn.owner)[1:]:
                inherited = self.find_method(base, method)
                if inherited is not None and inherited is not fn:
                    if self._step_batch_param(inherited, index):
                        return Value("device")
                    value = self.param_value(inherited.gkey, index, per_step=True)
                    break
        return _without_params(value) if value is not None else UNKNOWN_VALUE

    def call_value(
        self,
        module: ModuleSummary,
        owner: str | None,
        form: str,
        target: str,
        args: list[list[Atom]] | list[Value],
        depth: int = 0,
        keywords: dict[str, Any] | None = None,
    ) -> Value:
        """The value a call returns; `args` are the positional arguments (atoms, or values
        already resolved by the caller); `keywords` what its keywords pass (atoms, or values
        with None for `None`), when known."""
        if form in ("attr", "chain"):
            attr, _, method = target.partition(".")
            if self._host_method_holder(attr, method or "__call__", _asks_tensors(keywords)):
                # `self.crf.decode(em)` of torchcrf, `self.tokenizer(texts)`: Python lists
                return Value("host")
            if form == "chain":
                # `x.crf.decode(em)` of another object: a model's `decode` of tensors
                return Value("device")
        targets = self.resolve_call(module, owner, form, target)
        if not targets and form == "self" and owner is not None:
            form = "attr"  # `self.softmax(x)`: a sub-module attribute, not a method
            targets = self.resolve_call(module, owner, form, target)
        if not targets and form == "attr" and owner is not None:
            return self._attribute_call(module, owner, target, args, depth)
        if not targets and form == "inst" and target.endswith(".__call__"):
            return self._local_instance_call(module, owner, args, depth, keywords)
        if not targets and form == "name":
            if _SCHEDULE_CLASS.search(target):
                return Value(schedule=True)
            if target.rsplit(".", 1)[-1] in _PROCESS_COUNTS and not target.startswith("."):
                return Value("number")  # `dist_utils.get_global_size()` of a package
        if (
            form == "attr"
            and 1 < len(targets) <= _MAX_HELD_CLASSES
            and not any(isinstance(t, _Class) for t in targets)
        ):
            # `self.dec(z)` of an attribute a flag makes one of several project modules:
            # what any of their forwards returns for these arguments
            value = combine_values(
                [
                    self._bound_return(t, form, module, owner, args, depth, keywords)
                    for t in targets
                    if isinstance(t, _Function)
                ]
            )
        elif len(targets) != 1:
            return UNKNOWN_VALUE
        elif isinstance(targets[0], _Class):
            found = targets[0]
            kind = self.class_kind(found.gkey)
            tensor = self.tensor_class(found.gkey)
            if tensor is not None:
                # `PerAtom(data)` of a class deriving from `nn.Parameter`: a parameter, on
                # the device with its module; of one deriving from `torch.Tensor`: a tensor
                # wherever its data is.
                return Value(tensor, cls=found.gkey)
            return Value("module" if kind & ClassKind.TORCH_MODULE else "unknown", cls=found.gkey)
        else:
            value = self._bound_return(targets[0], form, module, owner, args, depth, keywords)
        if (
            form == "attr"
            and "." not in target
            and _has_unknown(value)
            and all(isinstance(t, _Function) and t.summary.name == "forward" for t in targets)
        ):
            # A sub-module of the project applied to tensors (`self.net_g(c, f0, ...)` in a
            # step), whose forward's value the model cannot follow to the end: its tensors
            # are where the arguments are, as a library module's are (_attribute_call).
            kinds, params = self._argument_places(args, module, owner, depth)
            if "device" in kinds:
                value = _presumed(value, Value("device", tensor=True))
            elif params:
                value = _presumed(value, Value("unknown", params=params, tensor=True))
        return value

    def _local_instance_call(
        self,
        module: ModuleSummary,
        owner: str | None,
        args: list[list[Atom]] | list[Value],
        depth: int,
        keywords: dict[str, Any] | None,
    ) -> Value:
        """`metric(a, b)` of a library object the function builds itself (`metric =
        PearsonCorrCoef()`, never moved: its state is on the CPU) applied to host data: a CPU
        tensor when every argument is host data and one is a CPU tensor (`a.cpu()`), and
        where the function's own parameters turn out to be when it is given them (a helper
        every call of which passes `.cpu()` copies computes on the CPU). Anything else
        (a device tensor, a value not known, a keyword not known to be host data): unknown,
        as before."""
        if not args:
            return UNKNOWN_VALUE
        for held in (keywords or {}).values():
            if held is None:
                continue
            passed = (
                held
                if isinstance(held, Value)
                else self.resolve_atoms(held, module, owner, depth + 1)
            )
            if passed is None or passed.params or passed.kind not in _HOSTLIKE | {"cpu"}:
                return UNKNOWN_VALUE
        kinds: list[str] = []
        params: set[int] = set()
        for arg in args:
            resolved = (
                arg if isinstance(arg, Value) else self.resolve_atoms(arg, module, owner, depth + 1)
            )
            if resolved is None or resolved.elements is not None or resolved.mask:
                return UNKNOWN_VALUE
            if resolved.params and resolved.kind in ("unknown", "cpu"):
                params |= resolved.params
                continue
            if resolved.params or resolved.kind not in _HOSTLIKE | {"cpu"}:
                return UNKNOWN_VALUE
            kinds.append(resolved.kind)
        if params:
            return Value("unknown", params=frozenset(params), tensor=True)
        return Value("cpu") if "cpu" in kinds else UNKNOWN_VALUE

    def _argument_places(
        self,
        args: list[list[Atom]] | list[Value],
        module: ModuleSummary,
        owner: str | None,
        depth: int,
    ) -> tuple[set[str], frozenset[int]]:
        """The kinds of the tensors a call passes, and the caller's parameters they depend
        on."""
        kinds: set[str] = set()
        params: set[int] = set()
        for arg in args:
            resolved = (
                arg if isinstance(arg, Value) else self.resolve_atoms(arg, module, owner, depth + 1)
            )
            if resolved is not None and resolved.elements is None:
                kinds.add(resolved.kind)
                params |= resolved.params
        return kinds, frozenset(params)

    def _bound_return(
        self,
        found: _Function,
        form: str,
        module: ModuleSummary,
        owner: str | None,
        args: list[list[Atom]] | list[Value],
        depth: int,
        keywords: dict[str, Any] | None,
    ) -> Value:
        """What a call of the function returns, its parameters bound to the arguments."""
        value = self.return_value(found.gkey)
        if (
            not value.params
            and not _has_params(value.elements)
            and not _has_params(tuple(v for _, v in value.entries or ()))
        ):
            return value
        bound_call = form in ("self", "super", "attr", "inst") and found.summary.bound
        offset = 1 if bound_call or "classmethod" in found.summary.decorators else 0

        def bind(value: Value) -> Value:
            # The callee's parameters are the call's arguments: a returned tuple's elements
            # too (`return out, state` hands back the argument `state`), never the caller's
            # own parameters of the same position.
            if value.param_device and value.params and value.elements is None:
                return self._on_param_device(
                    found, value, offset, args, keywords, module, owner, depth
                )
            elements = (
                tuple(bind(e) for e in value.elements) if value.elements is not None else None
            )
            # a returned dict's or record's known entries (`return Out(loss=f(x))`) too
            entries = (
                tuple((k, bind(v)) for k, v in value.entries) if value.entries is not None else None
            )
            if not value.params:
                return replace(value, elements=elements, entries=entries)
            kinds = [value.kind] if value.kind != "unknown" else []
            # An argument computed from the caller's own parameters (`self.odds(
            # self.softmax(logits))`) leaves the result depending on them: what the
            # caller's callers pass decides it, as for the caller's direct returns.
            passed_on: set[int] = set()
            for index in value.params:
                position = index - offset
                if 0 <= position < len(args):
                    arg = args[position]
                    resolved = (
                        arg
                        if isinstance(arg, Value)
                        else self.resolve_atoms(arg, module, owner, depth + 1)
                    )
                    if resolved is not None:
                        if resolved.kind != "unknown" or not resolved.params:
                            kinds.append(resolved.kind)
                        passed_on |= resolved.params
                        continue
                kinds.append("unknown")
            if value.tensor:
                # A torch function of the arguments: a tensor even when they are not.
                kinds = [k for k in kinds if k not in _HOSTLIKE] or (
                    [] if passed_on else ["unknown"]
                )
            kind = combine_kinds(kinds) if kinds else "unknown"
            tensor = value.tensor and bool(passed_on)
            placed = value.placed and bool(passed_on)
            if value.placed and not passed_on and kind != "cpu":
                # placed with arguments not known to be CPU tensors: on the device, as a
                # tensor annotated or made beside a device tensor is presumed to be
                kind = "device"
            return Value(
                kind,
                value.mask,
                frozenset(passed_on),
                elements,
                value.cls,
                tensor,
                placed,
                entries,
            )

        return bind(value)

    def _on_param_device(
        self,
        found: _Function,
        value: Value,
        offset: int,
        args: list[list[Atom]] | list[Value],
        keywords: dict[str, Any] | None,
        module: ModuleSummary,
        owner: str | None,
        depth: int,
    ) -> Value:
        """What a call of a helper returns that places its tensors on the device its
        parameters name (`pad_to_tensor(y, device=None)`): CPU tensors when the call leaves
        each such None-default parameter out or passes None or the CPU, device tensors when
        it passes another device (`x.device`) or a value not known, and where the caller's
        own parameter turns out to be when it hands that down."""
        params = found.summary.params
        kinds: set[str] = set()
        passed_on: set[int] = set()
        for index in value.params:
            name = params[index] if index < len(params) else None
            position = index - offset
            arg: Any = None
            given = False
            if 0 <= position < len(args):
                arg, given = args[position], True
            elif keywords is not None and name is not None and name in keywords:
                arg, given = keywords[name], True
            elif keywords is None or "**" in keywords:
                kinds.add("device")  # its keywords not known, or spread from a mapping
                continue
            if not given:
                if name in found.summary.none_params:
                    kinds.add("cpu")  # left to its default, None: torch's default device
                else:
                    kinds.add("device")
                continue
            resolved = (
                arg
                if arg is None or isinstance(arg, Value)
                else self.resolve_atoms(arg, module, owner, depth + 1)
            )
            if resolved is None or resolved.kind == "cpu_device":
                kinds.add("cpu")  # `device=None`, `device="cpu"`
            elif resolved.params and resolved.kind == "unknown":
                passed_on |= resolved.params
            else:
                kinds.add("device")
        if "device" in kinds:
            return Value("device", tensor=True)
        if passed_on:
            return Value("unknown", params=frozenset(passed_on), tensor=True, param_device=True)
        return Value("cpu", tensor=True)

    def held_attribute(self, owner: str | None, holder: str, attr: str) -> str | None:
        """ "cpu" when `self.<holder>` of the class `owner` holds instances of project classes
        only (`self.scheduler = Schedule(50)`), each of which sets `self.<attr>` to a CPU
        tensor (`self.timesteps = torch.linspace(1.0, eps, n)`, never moved): the held
        object's attribute stays there. None otherwise."""
        if owner is None:
            return None
        key = (owner, holder, attr)
        found = self.__dict__.setdefault("_held_attributes", {})
        if key in found:
            return found[key]
        found[key] = None  # a cycle's answer: not known
        classes: list[str] = []
        for gkey in self.mro(owner):
            cls = self.classes.get(gkey)
            if cls is None:
                continue
            for atom in cls.summary.attributes.get(holder) or ():
                value = self.resolve_atoms([atom], cls.module, gkey, 0)
                if value is None or value.cls is None:
                    return None
                classes.append(value.cls)
        held = [self.attribute_value(c, attr) for c in classes]
        if held and all(v is not None and v.kind == "cpu" and not v.elements for v in held):
            found[key] = "cpu"
        return found[key]

    def _host_method_holder(self, attr: str, method: str, tensors_asked: bool = False) -> bool:
        """Whether every project class that sets `self.<attr>` sets it to an instance of a
        library class whose `method` returns Python data (value_tables.external_host_method),
        and some class does."""
        if method not in EXTERNAL_HOST_METHOD_NAMES and method not in TOKENIZER_HOST_METHODS:
            return False
        holders = self.__dict__.get("_library_holders")
        if holders is None:
            # attribute name -> what every class that sets it calls to build it (None: some
            # class sets it to something else)
            found: dict[str, set[str] | None] = {}
            for cls in self.classes.values():
                for name, atoms in cls.summary.attributes.items():
                    if name in found and found[name] is None:
                        continue
                    calls = all(isinstance(a, list) and a[:2] == ["c", "name"] for a in atoms)
                    found[name] = (
                        (found.get(name) or set()) | {a[2] for a in atoms} if calls else None
                    )
            holders = {name: sorted(made) for name, made in found.items() if made}
            self.__dict__["_library_holders"] = holders
        made = holders.get(attr)
        return bool(made) and all(external_host_method(q, method, tensors_asked) for q in made)

    def _attribute_call(
        self,
        module: ModuleSummary,
        owner: str,
        target: str,
        args: list[list[Atom]] | list[Value],
        depth: int,
    ) -> Value:
        """`self.x(...)` / `self.x.m(...)` where `self.x` is a module from outside the
        project (`nn.Linear`, a Hugging Face model): tensors in, tensors out."""
        attr, _, method = target.partition(".")
        value = self.attribute_value(owner, attr)
        if value is not None and value.kind in ("device", "cpu") and method:
            # A method of a tensor attribute (`self.max_N.unsqueeze(0)`): it stays where it is.
            if method in ("cpu", "numpy", "tolist", "item", "size", "dim", "numel"):
                return Value(
                    {"cpu": "cpu", "numpy": "numpy", "tolist": "host"}.get(method, "number")
                )
            if method in ("to", "cuda", "xla"):
                return Value("device") if method != "to" else UNKNOWN_VALUE
            return Value(value.kind)
        if (value is None or value.kind == "unknown") and not method and args:
            # `self.tracker(activations)` of a library object fed numpy arrays only (a
            # torch module takes no numpy array): what it returns is numpy data too.
            passed = [
                arg if isinstance(arg, Value) else self.resolve_atoms(arg, module, owner, depth + 1)
                for arg in args
            ]
            if all(p is not None and p.kind == "numpy" and not p.params for p in passed):
                return Value("numpy")
        if not method and self._host_function_attribute(owner, attr):
            return Value("host")
        if value is None or value.kind != "module":
            return UNKNOWN_VALUE
        if method in MODULE_SELF_METHODS:
            return Value("module")
        if method and method not in TENSOR_METHODS_OF_MODULES:
            return UNKNOWN_VALUE  # `self.model.detect_eos(codes)` may return anything
        kinds, params = [], set()
        for arg in args:
            resolved = (
                arg if isinstance(arg, Value) else self.resolve_atoms(arg, module, owner, depth + 1)
            )
            if resolved is not None:
                kinds.append(resolved.kind)
                params |= resolved.params
        if "device" in kinds:
            return Value("device")
        # A torch module's output from its arguments: a tensor (or a container of them)
        # beside the module's weights when they turn out to be the step's batch.
        return Value("unknown", params=frozenset(params), tensor=bool(params))

    def iteration_splits_by_rank(self, class_gkey: str) -> bool | None:
        """Whether iterating instances of the class reads the rank or world size: True when
        `__iter__` or anything it calls in the project does, False when everything it calls
        is visible and none does, or when the only rank it reads is torch.distributed's
        (never initialised under Lightning's XLA strategy: rank 0 of 1 on every core), None
        when it hands off to code the model cannot see (`self.task.train__iter__()` on an
        attribute of unknown type)."""
        start = self.find_method(class_gkey, "__iter__")
        if start is None:
            return None
        seen: set[str] = set()
        stack = [start]
        while stack:
            fn = stack.pop()
            if fn.gkey in seen:
                continue
            seen.add(fn.gkey)
            if fn.summary.rank_source or (fn.summary.rank_aware and not fn.summary.dist_rank):
                return True
            if len(seen) > 50 or is_cold_name(fn.summary.name):
                # Summaries keep no calls of cold-named functions (`self.setup()` from
                # `__iter__`): what they call is not visible.
                return None
            for call in fn.summary.calls:
                targets = self.resolve_call(fn.module, fn.owner, call.form, call.target)
                found = [t for t in targets if isinstance(t, _Function)]
                if found:
                    stack.extend(found)
                elif targets:
                    continue  # a constructor of a project class
                elif call.form != "name" or (
                    call.target.startswith(".") and call.target[1:] not in _BUILTIN_NAMES
                ):
                    return None  # a method of an object the model does not know
        return False

    def dataset_length(
        self, class_gkey: str, args: list[int | None], keywords: dict[str, int | None]
    ) -> int | None:
        """The `len()` of `Cls(*args, **keywords)` for a dataset class of the project whose
        `__len__` returns a number or an `__init__` parameter it stored (`self.len = length`;
        Lightning's `RandomDataset(size, length)`); None when it is not visible."""
        length = self.find_method(class_gkey, "__len__")
        if length is None:
            return None
        if length.summary.const_return is not None:
            return length.summary.const_return
        returns = length.summary.returns
        if len(returns) != 1 or len(returns[0]) != 1:
            return None
        atom = returns[0][0]
        if not (isinstance(atom, list) and atom[0] == "a"):
            return None
        init = self.find_method(class_gkey, "__init__")
        if init is None or init.owner is None:
            return None
        owner = self.classes.get(init.owner)
        index = owner.summary.param_attributes.get(atom[1]) if owner is not None else None
        if index is None:
            return None
        name = init.summary.params[index]
        if name in keywords:
            return keywords[name]
        position = index - 1  # `self`
        return args[position] if 0 <= position < len(args) else None

    # --- per-file views ------------------------------------------------------------------

    def module_at(self, path: str) -> ModuleSummary | None:
        module = self.modules.get(path)
        if module is None and path not in ("-", "<stdin>"):
            module = self.modules.get(os.path.realpath(path))
        return module

    def view(self, path: str) -> FileView | None:
        module = self.module_at(path)
        if module is None:
            return None
        return FileView(self, module)

    def file_digest(self, path: str) -> str:
        """A digest of every fact about other files the checking of `path` reads: the hot
        chains of its functions, what its calls return, what its classes' attributes hold,
        and the kinds of the classes its imports name. Part of the result cache key, so a
        cached result is reused only if those facts did not change."""
        module = self.module_at(path)
        if module is None:
            return ""
        h = hashlib.blake2b(digest_size=16)
        hot = self.hot
        functions = self._module_functions[id(module)]
        for key, fn in functions.items():
            info = hot.get(fn.gkey)
            if info is not None:
                h.update(f"H{key}={info.root}|{info.chain}|{sorted(info.guards)};".encode())
                routes = self._routes.get(fn.gkey, {})
                if any(k[1] for k in routes):
                    text = sorted(
                        f"{k[0]}{sorted(map(repr, k[1]))}{r.root}{r.chain}{sorted(r.guards)}"
                        for k, r in routes.items()
                    )
                    h.update(f"R{key}={text};".encode())
                shown = self.shown_chain(fn.gkey)
                if shown is not None:
                    h.update(f"S{key}={shown.chain};".encode())
                chains = self._chains.get(fn.gkey, {})
                if any(k[2] for k in chains):
                    # the chains a finding under a test of a parameter may name (`chains`)
                    text = [
                        f"{k[0]}{k[1]}{sorted(map(repr, k[2]))}{r.root}{r.chain}"
                        for k, r in chains.items()
                    ]
                    h.update(f"P{key}={text};".encode())
            for call in fn.summary.calls:
                value = self.call_value(module, fn.owner, call.form, call.target, [])
                h.update(f"C{call.form}:{call.target}={value.digest_text()};".encode())
        for cls in module.classes:
            gkey = f"{self.prefix(module)}.{cls.qualname}"
            h.update(f"K{gkey}={self.class_kind(gkey).value};".encode())
            for gbase in self.mro(gkey):
                other = self.classes.get(gbase)
                if other is None:
                    continue
                for attr in other.summary.attributes:
                    value = self.attribute_value(gkey, attr)
                    h.update(f"A{attr}={value.digest_text() if value else '-'};".encode())
                h.update(f"M{gbase}={sorted(other.summary.methods)};".encode())
        for local, target in sorted(module.imports.items()):
            found = self.lookup(target, module)
            if isinstance(found, _Class):
                h.update(f"I{local}=class{self.class_kind(found.gkey).value};".encode())
            elif isinstance(found, _Function):
                h.update(f"I{local}=fn{self.return_value(found.gkey).digest_text()};".encode())
        # Whether Lightning code imports the file, and who calls its functions with which
        # arguments (TPU505's samplers, TPU304's collate helpers, TPU006's device defaults).
        h.update(f"L{module.path in self.lightning_imported()};".encode())
        callers = self._callers()
        for key, fn in functions.items():
            for caller, call, offset in callers.get(fn.gkey, []):
                h.update(
                    f"B{key}<{caller.gkey}|{caller.summary.cls}|{len(call.args)}+{offset}|"
                    f"{sorted(call.keywords)};".encode()
                )
        h.update(self.scope.file_digest(module).encode())
        return h.hexdigest()


@dataclass
class FileView:
    """The project model as one file's analysis sees it."""

    model: ProjectModel
    module: ModuleSummary
    base: str | None = None  # the folder chain paths are shown relative to
    _functions: dict[str, _Function] = field(default_factory=dict)
    _hot_code: tuple[str, HotCode | None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._functions = self.model._module_functions[id(self.module)]

    @property
    def path(self) -> str:
        return self.module.path

    def hot(self, key: str) -> HotInfo | None:
        fn = self._functions.get(key)
        return self.model.hot.get(fn.gkey) if fn is not None else None

    def hot_reason(self, info: HotInfo) -> str:
        return info.reason(self.module.path, self.base)

    def shown_reason(self, key: str, info: HotInfo) -> str:
        """The reason to show for hot function `key` (ProjectModel.shown_chain)."""
        fn = self._functions.get(key)
        shown = self.model.shown_chain(fn.gkey) if fn is not None else None
        return self.hot_reason(shown or info)

    def routes(self, key: str) -> list[tuple[dict[str, Any], str, str, frozenset[str]]] | None:
        """The routes of a hot function whose parameters hold literals on some (param_routes):
        (the literals by name, the root hook, the reason to show, the guards every way along
        the route shares), those of the earlier phases first. None when no route knows a
        literal (all its code is reached)."""
        fn = self._functions.get(key)
        if fn is None:
            return None
        routes = self.model.routes(fn.gkey)
        if not any(k[1] for k in routes):
            return None
        ordered = sorted(routes.items(), key=lambda item: item[0][0])
        return [(dict_of(k[1]), r.root, self.hot_reason(r), r.guards) for k, r in ordered]

    def chains(self, key: str) -> list[tuple[dict[str, Any], str, str]] | None:
        """The chains through each call of a hot function (ProjectModel.chains), as (the
        literals by name, the root hook, the reason to show), when some call passes its
        tested parameters a literal and the calls are more than one; else None."""
        fn = self._functions.get(key)
        if fn is None:
            return None
        chains = self.model.chains(fn.gkey)
        if len(chains) < 2 or not any(b for b, _ in chains):
            return None
        return [(dict_of(b), r.root, self.hot_reason(r)) for b, r in chains]

    def tests_after_fit(self) -> bool:
        """Whether a script of this file's project runs `trainer.test(...)` after
        `trainer.fit(...)` in one run: the test loop runs on the machine that trained."""
        return self.model.scope._tests_in_fit_run(self.module.path)

    def launcher_code(self, key: str | None, after_fit: bool = False) -> bool:
        """Whether code of function `key` (None: the top level) runs only in the process that
        launches training, which is no rank under the XLA strategy: a signal handler or what
        runs after `trainer.fit(...)` returned (`after_fit`: the code follows a fit call of
        its own function; see ProjectScope.launcher_function)."""
        scope = self.model.scope
        if key is not None and scope.launcher_function(self.module.path, key):
            return True
        return after_fit and not scope._gpu_launcher(self.module)

    def scope_reason(
        self,
        line: int,
        column: int,
        current: ModuleSummary | None = None,
        per_step: bool = True,
    ) -> str | None:
        """Why code at `line:column` is outside the default scope (None: inside).
        `current` is the summary of the file's text as checked, when it is not the text the
        model was built from (a fix round)."""
        return self.model.scope.reason(self.module.path, line, column, current, per_step)

    @property
    def has_hot_code(self) -> bool:
        hot = self.model.hot
        return any(fn.gkey in hot for fn in self._functions.values())

    def hot_code(self, source: str) -> HotCode | None:
        """The `ast` nodes of the file's hot functions in `source` (the text being checked,
        which a fix round may have changed since the model read it), for the hot-code rules'
        screens; None when Python cannot parse it."""
        cached = self._hot_code
        if cached is not None and cached[0] is source:
            return cached[1]
        tree = parse_python(source)
        found = None
        if tree is not None:
            hot = self.model.hot
            names = [fn.summary.qualname for fn in self._functions.values() if fn.gkey in hot]
            found = hot_code(tree, names, source)
        self._hot_code = (source, found)
        return found

    @property
    def class_kinds(self) -> ClassKind:
        """The union of the kinds of the file's classes."""
        kind = ClassKind.NONE
        for cls in self.module.classes:
            kind |= self.model.class_kind(self.class_gkey(cls.qualname))
        return kind

    @property
    def has_lightning_class(self) -> bool:
        return self.class_kinds.is_lightning

    def callers(self, key: str) -> list[tuple[str, str | None]]:
        """The project's functions that call function `key` of this file: (name, the qualname
        of the class it is a method of, or None)."""
        fn = self._functions.get(key)
        if fn is None:
            return []
        return [
            (caller.summary.name, caller.summary.cls)
            for caller, _, _ in self.model._callers().get(fn.gkey, [])
        ]

    def literal_arguments(self, key: str, parameter: str) -> list[tuple[str, bool | None]]:
        """The project's calls of function `key` that pass `parameter` a literal (None, True
        or False): (the calling function's name, the literal)."""
        fn = self._functions.get(key)
        if fn is None or parameter not in fn.summary.params:
            return []
        index = fn.summary.params.index(parameter)
        out = []
        for caller, call, offset in self.model._callers().get(fn.gkey, []):
            if parameter in call.keywords:
                position = parameter
            elif 0 <= index - offset < len(call.args):
                position = str(index - offset)
            else:
                continue
            if position in call.literals:
                out.append((caller.summary.name, call.literals[position]))
        return out

    def default_takers(self, key: str, parameter: str) -> list[tuple[str, ClassKind]]:
        """The project's calls of function `key` that leave `parameter` out, so its default is
        what the function gets (calls spreading `*args`/`**kwargs` count as leaving it out:
        what they pass is not visible): the calling function's name and the kind of the class
        it is a method of (NONE for a plain function)."""
        fn = self._functions.get(key)
        if fn is None or parameter not in fn.summary.params:
            return []
        index = fn.summary.params.index(parameter)
        out = []
        for caller, call, offset in self.model._callers().get(fn.gkey, []):
            if parameter not in call.keywords and len(call.args) + offset <= index:
                kind = self.model.class_kind(caller.owner) if caller.owner else ClassKind.NONE
                out.append((caller.summary.name, kind))
        return out

    @property
    def imported_by_lightning_code(self) -> bool:
        """Whether this file defines a Lightning class, or a module that does imports it
        (directly or through other project modules)."""
        return self.module.path in self.model.lightning_imported()

    def class_gkey(self, qualname: str) -> str:
        return f"{self.model.prefix(self.module)}.{qualname}"

    def owner_of(self, key: str) -> str | None:
        fn = self._functions.get(key)
        return fn.owner if fn is not None else None

    def attribute_refs(self, owner: str, attr: str) -> list[str]:
        """The qualified names of the functions a class (or a base in this file) assigns to
        `self.<attr>` (`self.reduce = scatter_mean`): what `self.reduce(...)` calls. (This
        file's only, so that a screen on the file's own text stays sound.)"""
        out: list[str] = []
        for gkey in self.model.mro(owner):
            cls = self.model.classes.get(gkey)
            if cls is None or cls.module is not self.module:
                continue
            refs = cls.module.scope.attribute_refs.get(cls.summary.qualname, {}).get(attr, ())
            out.extend(r for r in refs if r not in out)
        return out

    def call_value(
        self,
        owner: str | None,
        form: str,
        target: str,
        args: list[Value],
        keywords: dict[str, Value | None] | None = None,
    ) -> Value | None:
        """What a call in this file returns (None when the model does not know the callee)."""
        attr, _, method = target.partition(".")
        if form == "chain" or (
            form == "attr"
            and self.model._host_method_holder(attr, method or "__call__", _asks_tensors(keywords))
        ):
            # `x.crf.decode(em)`: a library object's method (ProjectModel.call_value)
            return self.model.call_value(self.module, owner, form, target, args, 0, keywords)
        targets = self.model.resolve_call(self.module, owner, form, target)
        if not targets and form == "attr" and owner is not None and "." not in target:
            # `self.tracker(activations)`: a library object fed numpy arrays only
            value = self.model._attribute_call(self.module, owner, target, args, 0)
            # (or a host package's function stored from a constructor's default)
            return value if value.kind in ("numpy", "host") else None
        if not targets and form == "inst" and target.endswith(".__call__"):
            # `metric(a.cpu(), b.cpu())` of a library object built here (ProjectModel.call_value)
            value = self.model.call_value(self.module, owner, form, target, args, 0, keywords)
            return value if value.kind == "cpu" and not value.params else None
        if len(targets) != 1:
            return None
        return self.model.call_value(self.module, owner, form, target, args, 0, keywords)

    def attribute_value(self, owner: str | None, attr: str) -> Value | None:
        if owner is None:
            return None
        return self.model.attribute_value(owner, attr)

    def held_attribute(self, owner: str | None, holder: str, attr: str) -> str | None:
        return self.model.held_attribute(owner, holder, attr)

    def stored_entry(self, owner: str | None, base: list[Any], key: str) -> Value | None:
        """See ProjectModel._stored_entry."""
        return self.model._stored_entry(owner, base, key)

    def batch_key_kind(self, key: str) -> str | None:
        return self.model.batch_key_kind(key)

    def keyed_pipeline_entry(self, atoms: list[Any], owner: str | None) -> bool:
        """See ProjectModel._keyed_pipeline_entry."""
        return self.model._keyed_pipeline_entry(atoms, owner)

    def keyed_entry_kind(self, owner: str | None, attr: str) -> str | None:
        """See ProjectModel.keyed_entry_kind."""
        return self.model.keyed_entry_kind(owner, attr) or None

    def attribute_is_metric(self, owner: str | None, attr: str) -> bool:
        """See ProjectModel.attribute_is_metric."""
        return owner is not None and self.model.attribute_is_metric(owner, attr)

    def record_attribute(self, name: str) -> str | None:
        return self.model.record_attribute(name)

    def passed_containers(self, key: str, index: int) -> Value | None:
        """See ProjectModel.passed_containers (`key`: this file's function)."""
        fn = self._functions.get(key)
        return self.model.passed_containers(fn.gkey, index) if fn is not None else None

    def made_class_number(self, form: str, target: str, attr: str) -> bool:
        """Whether the call (`form`, `target`) in this file makes instances of project
        classes whose attribute `attr` is a Python number (ProjectModel.class_number)."""
        return self.model.made_class_number(self.module, [["c", form, target]], attr)

    def param_value(
        self,
        key: str,
        index: int,
        outside_tests: bool = False,
        leaving_out: str | None = None,
        per_step: bool = False,
    ) -> Value | None:
        """What the project's calls pass as parameter `index` of this file's function `key`
        (see ProjectModel.param_value)."""
        fn = self._functions.get(key)
        if fn is None:
            return None
        return self.model.param_value(fn.gkey, index, 0, outside_tests, leaving_out, per_step)

    def passes_record_attribute(self, key: str, index: int) -> bool:
        """Whether a call passes parameter `index` of this file's function `key` a record's
        attribute (see ProjectModel.passes_record_attribute)."""
        fn = self._functions.get(key)
        return fn is not None and self.model.passes_record_attribute(fn.gkey, index)

    def forwarded_optional(self, key: str, index: int) -> bool:
        """Whether every call hands parameter `index` of this file's function `key` down from
        a caller's optional parameter (see ProjectModel.forwarded_optional)."""
        fn = self._functions.get(key)
        return fn is not None and self.model.forwarded_optional(fn.gkey, index)

    def called_every_step(self, key: str) -> bool:
        """Whether this file's function `key` is called only from code that runs every step
        (see ProjectModel.called_every_step)."""
        fn = self._functions.get(key)
        return fn is not None and self.model.called_every_step(fn.gkey)

    def index_texts(self, key: str) -> frozenset[str]:
        """What this file's function `key` uses as integer indices (see
        ProjectModel.index_texts)."""
        fn = self._functions.get(key)
        if fn is None:
            return frozenset()
        return self.model.index_texts(fn.gkey)

    def index_param(self, key: str, index: int) -> bool:
        """See ProjectModel.index_param."""
        fn = self._functions.get(key)
        return fn is not None and self.model.index_param(fn.gkey, index)

    def class_kind(self, qualname: str) -> ClassKind:
        return self.model.class_kind(self.class_gkey(qualname))

    def sampler_injection_off(self) -> list[str]:
        """The other files of the project (its repository: not another project checked in the
        same run) that turn Lightning's sampler injection off
        (`use_distributed_sampler=False`), nearest first: the training script that runs this
        file's loaders may be one of them. Lightning's own source is not the project's: its
        messages and docs name the flag (`setup_dataloaders(..., use_distributed_sampler=False)`)
        without turning anything off."""
        here = os.path.dirname(self.module.path)
        others = [
            m.path
            for m in self.model.modules.values()
            if m.sampler_injection_off
            and m is not self.module
            and (m.module or "").split(".", 1)[0] not in LIGHTNING_ROOTS
            and same_repository(m.path, self.module.path)
        ]
        return sorted(others, key=lambda p: (os.path.commonpath([here, p]) != here, p))

    def model_layers(self) -> str:
        """What the models of this file's project are built from (summary.MODEL_LAYERS):
        the union over the file's top-level package and the files of its folder and below
        (a script's own modules)."""
        cache = self.model.__dict__.setdefault("_model_layers", {})
        top = (self.module.module or "").split(".", 1)[0]
        here = os.path.dirname(self.module.path) or "\0"  # a path-less source: itself only
        key = (top, here)
        found = cache.get(key)
        if found is None:
            letters: set[str] = set()
            for m in self.model.modules.values():
                same_package = bool(top) and (m.module or "").split(".", 1)[0] == top
                if same_package or m.path.startswith(here + os.sep) or m.path == self.module.path:
                    letters.update(m.model_layers)
            found = cache[key] = "".join(sorted(letters))
        return found

    def _package_modules(self) -> list[ModuleSummary]:
        """The modules of this file's top-level package (or of its folder, for scripts)."""
        top = (self.module.module or "").split(".", 1)[0]
        here = os.path.dirname(self.module.path) or "\0"
        return [
            m
            for m in self.model.modules.values()
            if (bool(top) and (m.module or "").split(".", 1)[0] == top)
            or m.path.startswith(here + os.sep)
            or m is self.module
        ]

    def legacy_keyword_passed(self, keyword: str) -> bool:
        """Whether a call of this file's project passes the removed Trainer `keyword`."""
        return any(keyword in m.legacy_keywords for m in self._package_modules())

    def legacy_fields(self, keyword: str) -> list[tuple[str, int, int]]:
        """(path, line, column) of the config fields named `keyword` in this project."""
        return [
            (m.path, line, column)
            for m in self._package_modules()
            for name, line, column in m.legacy_fields
            if name == keyword
        ]

    def base_init_takes(self, qualname: str, parameter: str) -> bool:
        """Whether a project base class of the class `qualname` (this file's) has an
        `__init__` that takes `parameter`: a subclass repeating the base's default."""
        model = self.model
        for base in model.mro(self.class_gkey(qualname))[1:]:
            init = model.find_method(base, "__init__")
            if init is not None and parameter in init.summary.params:
                return True
        return False

    def display(self, path: str) -> str:
        return _display(path, self.base)

    def dataset_class(self, target: str) -> tuple[list[str], bool] | None:
        """For a class of the project named `target` (qualified or `.local`): the qualified
        names of its bases outside the project, and whether its code (or a project base's)
        reads the rank or world size. None when `target` is no project class."""
        found = self.model.lookup(target, self.module)
        if not isinstance(found, _Class):
            return None
        summaries = [
            self.model.classes[name].summary
            for name in self.model.mro(found.gkey)
            if name in self.model.classes
        ]
        # A rank from torch.distributed alone is no split on TPU cores (see
        # iteration_splits_by_rank); a rank from anywhere else, or a `rank` of unknown origin,
        # is.
        aware = any(s.rank_source for s in summaries) or any(
            s.rank_aware and not s.dist_rank for s in summaries
        )
        if not aware:
            splits = self.model.iteration_splits_by_rank(found.gkey)
            aware = splits is None or splits
        return self.model.external_bases(found.gkey), aware

    def dataset_reads_distributed_rank(self, target: str) -> bool:
        """Whether the project class `target` (or a project base) asks torch.distributed for
        its rank or world size."""
        found = self.model.lookup(target, self.module)
        if not isinstance(found, _Class):
            return False
        names = self.model.mro(found.gkey)
        if any(self.model.classes[n].summary.dist_rank for n in names if n in self.model.classes):
            return True
        method = self.model.find_method(found.gkey, "__iter__")
        return bool(method is not None and method.summary.dist_rank)

    def dataset_length(
        self, target: str, args: list[int | None], keywords: dict[str, int | None]
    ) -> int | None:
        """`len()` of a dataset built by calling `target` (a qualified or `.local` class
        name), when the project shows it."""
        found = self.model.lookup(target, self.module)
        if not isinstance(found, _Class):
            return None
        return self.model.dataset_length(found.gkey, args, keywords)


def build_model(
    files: Iterable[tuple[str, str]],
    hot_methods: Iterable[str] = (),
    lightning_version: str = "2.6",
) -> ProjectModel:
    """A model of (path, text) pairs, summarised without a cache (tests, single sources)."""
    from tpulint.analysis.summary import summarize

    summaries = []
    for path, text in files:
        module, is_package = (
            module_name_for_path(path) if path not in ("-", "<stdin>") else (None, False)
        )
        summaries.append(summarize(text, path, module, is_package))
    model = ProjectModel(summaries, hot_methods, lightning_version)
    texts = dict(files)
    # Files whose star imports bring imports are read again with them (as a run does).
    again = [
        summarize(texts[s.path], s.path, s.module, s.is_package, model.star_bindings(s))
        if s.scope.star_imports and model.star_bindings(s)
        else s
        for s in summaries
    ]
    if any(a is not s for a, s in zip(again, summaries, strict=True)):
        model = ProjectModel(again, hot_methods, lightning_version)
    return model


def summaries_digest(values: Iterable[Any]) -> str:  # pragma: no cover - debugging aid
    h = hashlib.sha1()
    for value in values:
        h.update(repr(value).encode())
    return h.hexdigest()


def _same_entries(
    one: list[tuple[str, tuple[_Function, Any, int]]],
    other: list[tuple[str, tuple[_Function, Any, int]]],
) -> bool:
    """Whether two lists of caller-index entries name the same callees, calls and offsets."""
    return len(one) == len(other) and all(
        a[0] == b[0] and a[1][1] is b[1][1] and a[1][2] == b[1][2]
        for a, b in zip(one, other, strict=True)
    )


def _passed(keywords: dict[str, _T], args: list[_T], name: str | None, position: int) -> _T | None:
    """What a call passes for a parameter: by its keyword `name`, else at `position`; None
    when it passes neither (the default, or a spread the model cannot see into)."""
    if name is not None and name in keywords:
        return keywords[name]
    if 0 <= position < len(args):
        return args[position]
    return None


def _route_into(
    route: HotInfo, target: _Function, site: tuple[str, int], guards: frozenset[str]
) -> HotInfo:
    """A route continued through the call at `site` into `target`, under `guards` (the
    route's and the call's: code that only this route reaches runs as rarely)."""
    return HotInfo(route.root, target.summary.name, (*route.chain, site), guards, route.off_tpu)
