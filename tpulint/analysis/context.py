"""The per-file context rules query while the walk is running.

It tracks, in source order: imports (aliases), the enclosing class and function, and the value
kinds of local names; and it answers lazily, only for nodes a rule is about to report, whether
the node sits under a guard (`if torch.cuda.is_available():`, `if batch_idx == 0:`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple

import libcst as cst

from tpulint.analysis.guards import (
    ANOMALY_CHECKS,
    ANOMALY_REDUCTIONS,
    always_sets_flag,
    change_targets,
    condition_kinds,
    counter_aliases,
    done_attribute,
    effective,
    first_n_counters,
    first_n_guards,
    first_n_targets,
    flush_targets,
    flushes,
    grows,
    incremented_attributes,
    is_report_callee,
    is_warning_callee,
    marker_targets,
    once_flags,
    rearmed_elsewhere,
    records,
    resets,
    settle_first_n,
)
from tpulint.analysis.hooks import STEP_METHODS, STEP_PART
from tpulint.analysis.imports import Aliases, dotted_name
from tpulint.analysis.param_routes import live as param_live
from tpulint.analysis.positions import PositionIndex
from tpulint.analysis.project import TRAINING_LOOP, ClassKind, Value
from tpulint.analysis.python_ast import PROGRAM_EXITS, parse_python
from tpulint.analysis.python_ast import walk as ast_walk
from tpulint.analysis.semantic import ClassInfo, FunctionInfo, ModuleAnalysis
from tpulint.analysis.value_query import PositionValues, Resolver
from tpulint.analysis.value_tables import BATCH_PARAMS, HOST_ANNOTATIONS, annotation_kind
from tpulint.analysis.values import CPU, DEVICE, HOST, UNKNOWN, ValueKind, kind_named

if TYPE_CHECKING:
    import ast

    from tpulint.config.settings import Config

# What every call may pass a forward for its parameter to be taken as given (host data).
_HOST_KIND_NAMES = frozenset({"number", "host", "numpy", "module"})
# Parameter names of shapes, sizes and counts (host values even in a forward).
_SHAPE_PARAM = re.compile(r"(?:^|_)(?:shape|shapes|size|sizes|hw|dim|dims)$|^(?:num|n)_")
_HOST_PARAMS = frozenset(
    {
        "batch_idx",
        "batch_nb",
        "batch_index",
        "dataloader_idx",
        "dataloader_nb",
        "optimizer_idx",
        "optimizer",
        "outputs",
        "trainer",
        "pl_module",
        "epoch",
        "stage",
        "hiddens",
        # Lightning's integer properties (`self.local_rank`, `trainer.global_rank`) passed
        # down under their own names: Python ints, even in a forward whose callers are not
        # resolved (`self.sampling_metrics(samples, local_rank=self.local_rank)`).
        "local_rank",
        "global_rank",
        "node_rank",
        "world_size",
        "current_epoch",
        "global_step",
    }
)
# Batch hooks whose `outputs` is what the step returned.
_BATCH_END_HOOKS = frozenset({"on_train_batch_end", "on_validation_batch_end", "on_test_batch_end"})
_CONTAINER_ANNOTATION = re.compile(r"^(dict|list|tuple|Dict|List|Tuple|Mapping|Sequence)\b")
# Annotations of modules (`nn.Module`, `L.LightningModule`, `Metric`, containers).


# Roots of base classes whose methods are known (so `self.x(...)` that is not one of
# them, nor defined in the file, is a sub-module or callable attribute).
_KNOWN_BASE_ROOTS = frozenset({"lightning", "pytorch_lightning", "torch", "object", "nn"})
# Bases that define no methods a class calls on itself (`class Wrapper(Base, ABC)`).
# Python's enum classes: their members are keys and labels, never tensors.
_ENUM_BASES = frozenset({"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"})
_MIXIN_BASES = frozenset({"ABC", "abc.ABC", "Generic", "typing.Generic"})
# LightningModule / nn.Module methods that take tensors and do not return device tensors
# of the same batch (or are not tensors at all).
_LIGHTNING_METHODS = frozenset(
    {
        "log",
        "log_dict",
        "print",
        "all_gather",
        "manual_backward",
        "toggle_optimizer",
        "untoggle_optimizer",
        "clip_gradients",
        "optimizers",
        "lr_schedulers",
        "to",
        "register_buffer",
        "register_parameter",
        "parameters",
        "named_parameters",
        "modules",
        "children",
        "state_dict",
        "load_state_dict",
        "apply",
        "train",
        "eval",
        "cpu",
        "cuda",
        "type",
        "float",
        "half",
        "double",
        "save_hyperparameters",
        "get_submodule",
        "get_parameter",
        "get_buffer",
        "zero_grad",
        "requires_grad_",
        "add_module",
    }
)
# Names that read like sub-modules, losses and metrics rather than helper methods.
_ATTRIBUTE_NAME = re.compile(
    r"(encoder|decoder|backbone|head|net|model|layer|block|proj|embed|criterion|loss_fn|"
    r"loss_func|_loss$|metric|accuracy|acc$|classifier|conv|linear|lstm|gru|rnn|mlp|fc\d*$|"
    r"norm$|dropout|attention|attn|transformer|generator|discriminator)",
    re.IGNORECASE,
)


# The statements whose code the function's routes may read another way (_route_view).
_STATEMENTS = (
    "SimpleStatementLine",
    "SimpleStatementSuite",
    "If",
    "For",
    "While",
    "With",
    "Try",
    "TryStar",
    "Match",
)


@dataclass
class _FunctionScope:
    info: FunctionInfo | None
    # The function as the statement being walked sees it, when the routes that reach that
    # statement differ from the function's (see FileContext._route_view); the views of the
    # enclosing statements before.
    view: FunctionInfo | None = None
    saved: list[FunctionInfo | None] = field(default_factory=list)


class FileContext(Resolver):
    """What rules know about the file and the current position of the walk."""

    def __init__(
        self,
        *,
        path: str,
        source: str,
        module: cst.Module,
        config: Config,
        aliases: Aliases,
        analysis: ModuleAnalysis,
    ) -> None:
        self.path = path
        self.source = source
        self.module = module
        self.config = config
        self.aliases = aliases
        self.analysis = analysis
        self.parents: dict[int, cst.CSTNode] = {}
        self._scopes: list[_FunctionScope] = [_FunctionScope(None)]
        self._classes: list[ClassInfo | None] = []
        self._values: PositionValues | None = None
        # Spans of this file's nodes, one index for the value inference, the rewrites and
        # the reports: each function's code is generated once to place its nodes.
        self.positions = PositionIndex(module, source)
        self._ast_tree: ast.Module | None = None
        self._ast_parsed = False
        self._guard_cache: dict[Any, frozenset[str]] = {}
        self._index_texts: dict[str, frozenset[str]] = {}
        self._step_loops: dict[int, bool] = {}
        self._ast_ifs: dict[int, _AstIf] | None = None
        self._own_increments: frozenset[str] | None = None  # see _incremented
        # State that rules of one file share (e.g. binding trackers several rules use), so
        # the work is done once per file rather than once per rule.
        self.shared: dict[str, Any] = {}

    def release(self) -> None:
        """Drop the references that make the context part of reference cycles (its value
        inference holds a bound method of it; shared rule state holds rules that hold it),
        so the whole tree is freed by reference counting when the file is done, without
        waiting for the cyclic garbage collector."""
        self._values = None
        self.shared.clear()
        self._ast_tree = None  # the tree is the file's: freed with it
        self._ast_parsed = False
        self._ast_ifs = None

    # --- structure -------------------------------------------------------------------

    @property
    def function(self) -> FunctionInfo | None:
        """The innermost function being walked (as the statement being walked sees it: code
        under a test of a parameter that the literals some hooks pass decide is code of the
        other hooks only, or of none; see `_route_view`)."""
        scope = self._scopes[-1]
        return scope.view if scope.view is not None else scope.info

    @property
    def klass(self) -> ClassInfo | None:
        """The innermost class whose body (or method) is being walked."""
        return self._classes[-1] if self._classes else None

    @property
    def lightning_class(self) -> ClassInfo | None:
        """The Lightning class (LightningModule, DataModule, Callback) being walked, if any."""
        for info in reversed(self._classes):
            if info is not None and info.is_lightning:
                return info
        return None

    @property
    def in_hot_code(self) -> bool:
        info = self.function
        return info is not None and info.hot

    @property
    def hot_reason(self) -> str | None:
        info = self.function
        return info.hot_reason if info is not None else None

    @property
    def method_name(self) -> str | None:
        """Name of the method (of a class) the walk is in, looking through nested defs."""
        info = self.function
        while info is not None:
            if info.cls is not None:
                return info.name
            info = info.parent
        return None

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(id(node))

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self.parents.get(id(node))
        while current is not None:
            yield current
            current = self.parents.get(id(current))

    def enclosing_statement(self, node: cst.CSTNode) -> cst.CSTNode | None:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return ancestor
        return None

    # --- names and values ------------------------------------------------------------

    def qualify(self, node: cst.BaseExpression) -> str | None:
        """Qualified name of a dotted expression through the file's imports (`xm.mark_step`
        -> `torch_xla.core.xla_model.mark_step`)."""
        return self.aliases.qualify(node)

    def enum_member(self, node: cst.BaseExpression) -> bool:
        """Whether `node` is `Cls.name` of a project class derived from `enum.Enum`
        (`batch[DataKey.mask]`: a dict's key, never a tensor), wherever the class is."""
        if not (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)):
            return False
        view = self.analysis.view
        if view is None:
            return False
        name = node.value.value
        model = view.model
        qualified = self.aliases.qualify_dotted(name)
        if qualified is not None:
            found = model.resolve_class(qualified, view.module)
        else:
            found = model.classes.get(view.class_gkey(name))
        if found is None:
            return False
        return any(
            b.rsplit(".", 1)[-1] in _ENUM_BASES and b.split(".", 1)[0] in ("enum", b)
            for b in model.external_bases(found.gkey)
        )

    def string_constant(self, node: cst.BaseExpression) -> bool:
        """Whether `node` is a name (`IMAGE_MASKS`), a module's name (`keys.MASK`) or a
        class attribute (`Keys.MASK`) that the project binds only to a string literal, in
        this file or through its imports (`batch[IMAGE_MASKS]`: a dict's key, never a
        tensor). A name of unknown value is none."""
        view = self.analysis.view
        if view is None:
            return False
        model = view.model
        if isinstance(node, cst.Name):
            name = node.value
            qualified = self.aliases.qualify_dotted(name)
            if qualified is None:
                return name in view.module.string_constants
            module_name, _, last = qualified.rpartition(".")
            return _module_binds(model, module_name, last, view.module, 0, "string_constants")
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
            owner, attr = node.value.value, node.attr.value
            qualified = self.aliases.qualify_dotted(owner)
            if qualified is None:
                found = model.classes.get(view.class_gkey(owner))
            else:
                found = model.resolve_class(qualified, view.module)
                if found is None:  # `keys.MASK` of an imported module `keys`
                    return _module_binds(model, qualified, attr, view.module, 0, "string_constants")
            if found is None or "." in found.summary.qualname:
                return False
            return f"{found.summary.name}.{attr}" in found.module.string_constants
        return False

    def qualify_callee(self, func: cst.BaseExpression) -> str | None:
        """`qualify`, and for `self.<attr>` the one function the class assigns the attribute
        (`self.reduce = scatter_mean`, then `self.reduce(x, index)`: `torch_scatter.
        scatter_mean`). None when the attribute may hold several."""
        qualified = self.aliases.qualify(func)
        if qualified is not None:
            return qualified
        if not (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            return None
        view, function = self.analysis.view, self.function
        owner = function.owner if function is not None else None
        if view is None or owner is None:
            return None
        refs = view.attribute_refs(owner, func.attr.value)
        return refs[0] if len(refs) == 1 else None

    def callee_choices(self, func: cst.BaseExpression) -> list[str]:
        """For `self.<attr>(...)`, every function the class assigns the attribute in some
        branch (`self.pool = global_add_pool` in one, `global_mean_pool` in another); for any
        other callee, what `qualify_callee` names (or nothing)."""
        qualified = self.qualify_callee(func)
        if qualified is not None:
            return [qualified]
        if not (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            return []
        view, function = self.analysis.view, self.function
        owner = function.owner if function is not None else None
        if view is None or owner is None:
            return []
        return view.attribute_refs(owner, func.attr.value)

    @property
    def values(self) -> PositionValues:
        """The one value inference, asked about this file's nodes by position."""
        if self._values is None:
            self._values = PositionValues(
                self.source,
                self.module,
                self.parents,
                self.aliases.module,
                self.aliases.is_package,
                self,
                self.positions,
                lambda: self.ast_tree,
            )
        return self._values

    @property
    def ast_tree(self) -> ast.Module | None:
        """The file read with Python's parser (None when it rejects it), parsed once for the
        value inference and the rewrites that read the file with `ast`."""
        if not self._ast_parsed:
            self._ast_parsed = True
            self._ast_tree = parse_python(self.source)
        return self._ast_tree

    def value_kind(self, node: cst.BaseExpression) -> ValueKind:
        """What the expression holds (a device tensor, a CPU tensor, a module, numpy, ...)."""
        return self.values.kind(node)

    def is_dict(self, node: cst.BaseExpression) -> bool:
        """Whether the expression is surely a dict built in this code (a literal or a
        comprehension): a tensor key is hashed by identity there, never read."""
        return self.values.is_dict(node)

    def is_sequence(self, node: cst.BaseExpression) -> bool:
        """Whether the expression is surely a Python list or tuple built in this code (a
        display or a comprehension): indexing it with a tensor reads the tensor on the host."""
        return self.values.is_sequence(node)

    def dict_value_kinds(self, node: cst.BaseExpression) -> list[ValueKind] | None:
        """What each value a local dict holds is, when the expression surely holds a dict
        built in this code (a literal or comprehension, filled in or not); else None."""
        return self.values.dict_value_kinds(node)

    def _is_method(self, name: str, info: ClassInfo | None = None) -> bool:
        """Whether `self.<name>` names a method of the class being walked (or of a base
        class; unknown external bases count as having it only for Lightning's API)."""
        if info is None:
            info = self.klass
        if info is None:
            return True
        seen: set[int] = set()
        stack = [info]
        while stack:
            current = stack.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            if name in current.methods:
                return True
            stack.extend(current.local_bases)
        view = self.analysis.view
        if view is not None:
            # The project's classes, through every file: a base defined in another module
            # (or in this one) that neither defines the method nor derives from an unknown
            # class leaves `self.<name>` an attribute (a loss module its `__init__` stores).
            gkey = view.class_gkey(info.local_qualname)
            model = view.model
            if gkey in model.classes:
                if model.find_method(gkey, name) is not None:
                    return True
                if all(
                    b.split(".", 1)[0] in _KNOWN_BASE_ROOTS or b in _MIXIN_BASES
                    for b in model.external_bases(gkey)
                ):
                    return name in _LIGHTNING_METHODS
        if any(b for b in info.bases if b.split(".", 1)[0] not in _KNOWN_BASE_ROOTS):
            # A base class from elsewhere in the project may define it: stay unknown
            # unless the name is plainly an attribute-style name.
            return not _ATTRIBUTE_NAME.search(name)
        return name in _LIGHTNING_METHODS

    # --- the project model ------------------------------------------------------------

    @property
    def owner(self) -> str | None:
        """The project model's key of the class whose method is being walked."""
        info = self.function
        if info is not None and info.owner is not None:
            return info.owner
        klass = self.klass
        view = self.analysis.view
        if klass is not None and view is not None:
            return view.class_gkey(klass.local_qualname)
        return None

    # --- what the value inference leaves symbolic (value_query.Resolver) ----------------

    def _class_of(self, function: cst.FunctionDef | None) -> ClassInfo | None:
        current: cst.CSTNode | None = function
        while current is not None:
            if isinstance(current, cst.ClassDef):
                return self.analysis.klass(current)
            current = self.parents.get(id(current))
        return None

    def _owner_of(self, function: cst.FunctionDef | None) -> str | None:
        """The project model's key of the class whose method `function` is."""
        info = self.analysis.function(function) if function is not None else None
        if info is not None and info.owner is not None:
            return info.owner
        klass = self._class_of(function)
        view = self.analysis.view
        if klass is not None and view is not None:
            return view.class_gkey(klass.local_qualname)
        return None

    def current_function(self) -> cst.FunctionDef | None:
        info = self.function
        return info.node if info is not None else None

    def index_texts(self) -> frozenset[str]:
        """The values the current function uses as integer indices (`scatter_mean(x, m)`,
        `m.max() + 1`, a project helper that does), as tpulint.analysis.index_uses.value_text
        spells them: such a value is not a boolean mask, whatever its name."""
        info = self.function
        view = self.analysis.view
        if info is None or view is None or not info.key:
            return frozenset()
        cached = self._index_texts.get(info.key)
        if cached is None:
            texts = set(view.index_texts(info.key))
            params = info.node.params
            names = [p.name.value for p in (*params.posonly_params, *params.params)]
            names += [p.name.value for p in params.kwonly_params]
            # A parameter every call passes a value its caller uses as an integer index.
            texts.update(n for i, n in enumerate(names) if view.index_param(info.key, i))
            cached = self._index_texts[info.key] = frozenset(texts)
        return cached

    def param_passed_mask(self, name: str) -> bool:
        """Whether `name` is a parameter of the function being walked that every call of the
        project from code that runs every step passes a boolean tensor (`m > 0`,
        `m.to(torch.bool)`, a helper returning one): a mask, whatever its name says."""
        info = self.function
        view = self.analysis.view
        if info is None or view is None or not info.key or not info.hot:
            return False
        params = info.node.params
        names = [p.name.value for p in (*params.posonly_params, *params.params)]
        names += [p.name.value for p in params.kwonly_params]
        if name not in names or name in ("self", "cls"):
            return False
        passed = view.param_value(info.key, names.index(name), per_step=True)
        return passed is not None and passed.mask and passed.kind in ("device", "unknown")

    def is_method(self, function: cst.FunctionDef | None, name: str) -> bool:
        return self._is_method(name, self._class_of(function)) if function is not None else True

    def keyed_entry_kind(self, function: cst.FunctionDef | None, attr: str) -> ValueKind | None:
        view = self.analysis.view
        found = view.keyed_entry_kind(self._owner_of(function), attr) if view is not None else None
        return kind_named(found) if found is not None else None

    def keyed_pipeline_entry(self, function: cst.FunctionDef | None, atoms: list[Any]) -> bool:
        view = self.analysis.view
        return view is not None and view.keyed_pipeline_entry(atoms, self._owner_of(function))

    def batch_key_kind(self, key: str) -> ValueKind | None:
        view = self.analysis.view
        found = view.batch_key_kind(key) if view is not None else None
        return kind_named(found) if found is not None else None

    def imported_cpu_constants(self) -> frozenset[str]:
        """The names this module imports (`from .tables import ORDER`) that a project module
        binds once to a CPU tensor and never moves (ModuleSummary.cpu_constants)."""
        view = self.analysis.view
        if view is None:
            return frozenset()
        found = set()
        for name, target in view.module.imports.items():
            if "." not in target:
                continue
            module_name, _, last = target.rpartition(".")
            if _module_binds(view.model, module_name, last, view.module, 0, "cpu_constants"):
                found.add(name)
        return frozenset(found)

    def star_bindings(self) -> dict[str, str]:
        view = self.analysis.view
        return dict(view.module.star_bindings) if view is not None else {}

    def tests_after_fit(self) -> bool:
        """Whether the project runs `trainer.test` after `trainer.fit` in one run (its test
        hooks run on the TPU that trained; see ProjectScope._tests_in_fit_run)."""
        view = self.analysis.view
        return view is not None and view.tests_after_fit()

    def never_run_branches(self) -> frozenset[tuple[int, int]]:
        view = self.analysis.view
        if view is None:
            return frozenset()
        return view.model.scope.never_run_branches(view.module.path)

    def record_attribute(self, name: str) -> ValueKind | None:
        view = self.analysis.view
        found = view.record_attribute(name) if view is not None else None
        return kind_named(found) if found is not None else None

    def class_number(self, form: str, target: str, name: str) -> bool:
        """Whether attribute `name` of what the constructor call (`form`, `target`) makes is
        a Python number (ProjectModel.class_number)."""
        view = self.analysis.view
        return view is not None and view.made_class_number(form, target, name)

    def attribute_kind(self, function: cst.FunctionDef | None, name: str) -> ValueKind:
        view = self.analysis.view
        if view is None:
            return UNKNOWN
        value = view.attribute_value(self._owner_of(function), name)
        if value is None or value.kind == "unknown" or value.elements is not None:
            return UNKNOWN
        return kind_named(value.kind)

    def held_attribute_kind(
        self, function: cst.FunctionDef | None, holder: str, name: str
    ) -> ValueKind:
        view = self.analysis.view
        if view is None:
            return UNKNOWN
        held = view.held_attribute(self._owner_of(function), holder, name)
        return CPU if held == "cpu" else UNKNOWN

    def stored_entry_kind(
        self, function: cst.FunctionDef | None, base: list[Any], key: str
    ) -> ValueKind | None:
        view = self.analysis.view
        if view is None:
            return None
        value = view.stored_entry(self._owner_of(function), base, key)
        return kind_named(value.kind) if value is not None else None

    def call_kind(
        self,
        function: cst.FunctionDef | None,
        form: str,
        target: str,
        args: list[ValueKind],
        keywords: dict[str, ValueKind | None] | None = None,
    ) -> tuple[ValueKind, Value | None]:
        view = self.analysis.view
        if view is None:
            return UNKNOWN, None
        value = view.call_value(
            self._owner_of(function),
            form,
            target,
            [Value(k.value) for k in args],
            {n: None if k is None else Value(k.value) for n, k in keywords.items()}
            if keywords is not None
            else None,
        )
        if value is None or value.kind == "unknown" or value.elements is not None:
            return UNKNOWN, value
        return kind_named(value.kind), value

    def param_kind(self, function: cst.FunctionDef, index: int) -> ValueKind:
        info = self.analysis.function(function)
        params = function.params
        ordered = [*params.posonly_params, *params.params, *params.kwonly_params]
        view = self.analysis.view
        if (
            info is not None
            and view is not None
            and index == len(ordered) + 1
            and isinstance(params.star_kwarg, cst.Param)
        ):
            # the values of `**kwargs`: what the project's calls pass by the keywords no
            # named parameter takes, when all are host values
            passed = view.param_value(info.key, index, outside_tests=True, per_step=info.hot)
            if (
                passed is not None
                and passed.kind in _HOST_KIND_NAMES
                and passed.elements is None
                and not passed.mask
            ):
                return kind_named(passed.kind)
            return UNKNOWN
        if info is None or not 0 <= index < len(ordered):
            return UNKNOWN
        param = ordered[index]
        if param.name.value in ("self", "cls"):
            return UNKNOWN
        return self._param_kind(param, index, info.hot, info)

    def call_target(self, node: cst.Call) -> tuple[str, str] | None:
        """(form, target) of a call as the project model names calls (`("self", "_loss")`,
        `("name", "pkg.losses.off_diag")`, `("attr", "metric.update")`)."""
        func = node.func
        if isinstance(func, cst.Attribute):
            receiver = func.value
            if isinstance(receiver, cst.Name) and receiver.value == "self":
                if self._is_method(func.attr.value):
                    return "self", func.attr.value
                return "attr", func.attr.value
            if (
                isinstance(receiver, cst.Call)
                and isinstance(receiver.func, cst.Name)
                and receiver.func.value == "super"
            ):
                return "super", func.attr.value
            if (
                isinstance(receiver, cst.Attribute)
                and isinstance(receiver.value, cst.Name)
                and receiver.value.value == "self"
            ):
                return "attr", f"{receiver.attr.value}.{func.attr.value}"
        dotted = dotted_name(func)
        if dotted is None:
            return None
        root = dotted.split(".", 1)[0]
        if root == "self" or self.values.is_local(root, node):
            return None  # a local value's method
        qualified = self.aliases.qualify_dotted(dotted)
        return "name", qualified if qualified is not None else "." + dotted

    def call_value(self, node: cst.Call, arg_kinds: list[ValueKind] | None = None) -> Value | None:
        """What the project model says a call returns (None when it does not know the
        callee): its kind, whether it is a boolean mask, a tuple's elements."""
        view = self.analysis.view
        if view is None:
            return None
        target = self.call_target(node)
        if target is None:
            return None
        if arg_kinds is None:
            arg_kinds = [
                self.value_kind(a.value) for a in node.args if a.keyword is None and not a.star
            ]
        args = [Value(k.value) for k in arg_kinds]
        keywords: dict[str, Value | None] = {}
        for arg in node.args:
            if arg.star == "**":
                keywords["**"] = Value()
            elif arg.keyword is not None:
                is_none = isinstance(arg.value, cst.Name) and arg.value.value == "None"
                keywords[arg.keyword.value] = (
                    None if is_none else Value(self.value_kind(arg.value).value)
                )
        return view.call_value(self.owner, target[0], target[1], args, keywords)

    # --- guards ----------------------------------------------------------------------

    def guards(self, node: cst.CSTNode) -> frozenset[str]:
        """Kinds of conditions the node runs under: "device-check" (CUDA availability or
        device type tests) and "rare" (only some batches/epochs: `if batch_idx == 0:`,
        `if self.global_step % 100 == 0:` in training code, logging/plotting flags, a lazy
        initialisation that runs once), including early returns (`if batch_idx > 0:
        return`) earlier in the same function, and the guards every call that makes a hot
        helper hot shares, across files (`if batch_idx == 0: self.plot(...)` makes all of
        `plot` rare)."""
        kinds, function = self._local_guards(node, self.parents)
        root = None
        if function is not None:
            info = self.analysis.function(function)
            if (
                info is not None
                and info.hot
                and (info.routes is not None or info.chains is not None)
            ):
                view = self._route_view(node, info)
                if view is not None and not view.hot:
                    kinds.add("rare")  # no route that reaches the function reaches it
                elif view is not None:
                    info = view
            if info is not None and info.hot:
                kinds |= info.call_guards
                root = info.root_hook
                if (
                    info.hot_reason == root
                    and (root or "").startswith(TRAINING_LOOP)
                    and not self._in_step_loop(node)
                ):
                    kinds.add("rare")  # before or after the training loop: once per run
        return effective(kinds, root)

    # --- routes: tests of a parameter the hooks' literals decide (param_routes) ----------

    def _route_view(self, node: cst.CSTNode, info: FunctionInfo) -> FunctionInfo | None:
        """The function as code at `node` sees it when the routes that reach the function
        (FileView.routes) do not all reach it: under `if log == "val":` in a helper that
        `training_step` calls with `log="train"` and `validation_step` with `log="val"`, the
        code is validation code (`validation_step` names it, Lightning's defaults there
        apply); reached by no route, it is not hot at all. Reached by its own hook, but not
        through the call its chain names (`if mask is not None:` in a helper that one
        `forward` calls with no mask and another with one), the chain named is the first
        through a call that reaches it (`_live_chain`). None: as the function."""
        routes = info.routes
        if not routes:
            return self._live_chain(node, info)
        conds = self._route_conds(node, info.node)
        if not conds:
            return None
        live = [route for route in routes if param_live(conds, route[0])]
        if len(live) == len(routes):
            return self._live_chain(node, info, conds)
        # The guards the routes that reach the code all share: under `if dump_dir is not
        # None:` where only a call under `if batch_idx == 0:` passes a `dump_dir`, the code
        # runs as rarely as that call.
        shared = frozenset.intersection(*(route[3] for route in live)) if live else frozenset()
        own = any(route[1] == info.root_hook for route in live)
        if own and shared <= info.hot_guards:
            return self._live_chain(node, info, conds)
        cache = self.shared.setdefault("route_views", {})
        key = (id(info), None if own else live[0][2] if live else None, shared)
        view = cache.get(key)
        if view is None:
            if not live:
                view = replace(info, hot_reason=None, root_hook=None, call_guards=frozenset())
            elif own:
                view = replace(
                    info,
                    hot_guards=info.hot_guards | shared,
                    call_guards=effective(info.hot_guards | shared, info.root_hook),
                )
            else:
                _, root, reason, _ = live[0]
                view = replace(
                    info,
                    hot_reason=reason,
                    root_hook=root,
                    hot_guards=info.hot_guards | shared,
                    call_guards=effective(info.hot_guards | shared, root),
                )
            cache[key] = view
        return view

    def _live_chain(
        self, node: cst.CSTNode, info: FunctionInfo, conds: list[tuple[str, bool]] | None = None
    ) -> FunctionInfo | None:
        """The function as code at `node` sees it when the chain its message names passes
        the function literals that make a test around `node` false while another chain from
        the same hook reaches it (FileView.chains): named by the first such chain (phases in
        order, then the order the chains were found). None: as the function."""
        chains = info.chains
        if not chains or info.hot_reason is None:
            return None
        if conds is None:
            conds = self._route_conds(node, info.node)
            if not conds:
                return None
        shown = [c for c in chains if c[2] == info.hot_reason]
        if not shown or any(param_live(conds, c[0]) for c in shown):
            return None  # the chain named reaches it (or is not one of these)
        live = next((c for c in chains if c[1] == info.root_hook and param_live(conds, c[0])), None)
        if live is None:
            return None
        cache = self.shared.setdefault("route_views", {})
        key = (id(info), "chain", live[2])
        view = cache.get(key)
        if view is None:
            view = cache[key] = replace(info, hot_reason=live[2])
        return view

    def _route_conds(self, node: cst.CSTNode, function: cst.FunctionDef) -> list[tuple[str, bool]]:
        """The tests code at `node` runs under within `function`, as (test text, whether it
        runs where the test holds): the `if`s around it and the early exits before it."""
        conds: list[tuple[str, bool]] = []
        child: cst.CSTNode = node
        ancestor = self.parents.get(id(node))
        while ancestor is not None and ancestor is not function:
            if isinstance(ancestor, cst.If):
                if child is ancestor.body:
                    conds.append((self._test_text(ancestor.test), True))
                elif child is ancestor.orelse:
                    conds.append((self._test_text(ancestor.test), False))
            elif isinstance(ancestor, cst.IndentedBlock):
                for statement in ancestor.body:
                    if statement is child:
                        break
                    test = _early_exit_test(statement)
                    if test is not None:
                        conds.append((self._test_text(test), False))
            elif isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                break
            child = ancestor
            ancestor = self.parents.get(id(ancestor))
        return conds

    def _test_text(self, test: cst.BaseExpression) -> str:
        texts = self.shared.setdefault("route_tests", {})
        text = texts.get(id(test))
        if text is None:
            text = texts[id(test)] = self.module.code_for_node(test)
        return text

    def _enter_statement(self, node: cst.CSTNode) -> None:
        scope = self._scopes[-1]
        info = scope.info
        if info is None or (info.routes is None and info.chains is None) or not info.hot:
            return
        scope.saved.append(scope.view)
        scope.view = self._route_view(node, info)

    def _leave_statement(self, node: cst.CSTNode) -> None:
        scope = self._scopes[-1]
        info = scope.info
        if info is None or (info.routes is None and info.chains is None) or not info.hot:
            return
        scope.view = scope.saved.pop()

    visit_SimpleStatementLine = visit_SimpleStatementSuite = _enter_statement
    visit_If = visit_For = visit_While = visit_With = visit_Try = visit_TryStar = _enter_statement
    visit_Match = _enter_statement
    leave_SimpleStatementLine = leave_SimpleStatementSuite = _leave_statement
    leave_If = leave_For = leave_While = leave_With = leave_Try = leave_TryStar = _leave_statement
    leave_Match = _leave_statement

    def _in_step_loop(self, node: cst.CSTNode) -> bool:
        """Whether `node` is in the body of a loop of its function that steps the optimizer
        (`loss.backward()`, `fabric.backward(loss)`, `xm.optimizer_step(opt)`)."""
        child: cst.CSTNode = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.For, cst.While)) and child is ancestor.body:
                cached = self._step_loops.get(id(ancestor))
                if cached is None:
                    cached = self._step_loops[id(ancestor)] = _loop_steps(
                        ancestor
                    ) and not _epoch_loop(ancestor)
                if cached:
                    return True
            elif isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            child = ancestor
        return False

    def _method_resolver(
        self, node: cst.CSTNode, parents: dict[int, cst.CSTNode]
    ) -> Callable[[str], cst.FunctionDef | None]:
        """`self.<name>` -> its method, in the class around `node` (None outside a class)."""
        ancestor = parents.get(id(node))
        while ancestor is not None and not isinstance(ancestor, cst.ClassDef):
            ancestor = parents.get(id(ancestor))
        info = self.analysis.klass(ancestor) if ancestor is not None else None
        return info.resolve_method if info is not None else (lambda name: None)

    def _ast_if(self, node: cst.CSTNode) -> _AstIf | None:
        """The `ast` reading of an `if` statement of this file, with its class and the block
        it is in: the run-once guards are read on `ast`, as the project model reads them.
        The file's `if` statements are paired in source order (None if the parsers differ)."""
        if self._ast_ifs is None:
            self._ast_ifs = {}
            tree = self.ast_tree
            if tree is not None:
                readings = list(_ast_ifs(tree.body, None))
                nodes = [n for n in _preorder(self.module) if isinstance(n, cst.If)]
                if len(readings) == len(nodes):
                    self._ast_ifs = {id(n): r for n, r in zip(nodes, readings, strict=True)}
        return self._ast_ifs.get(id(node))

    def _lazy_block(self, node: cst.If) -> bool:
        """`if not self.built: ...; self.built = True` (or `if self.cache is None:` that sets
        the cache, `if self._first: ...; self._first = False`): the body runs once, when it
        ends its guard on every path (itself or through a method of the class it calls) and
        no other method arms it again (`guards.always_sets_flag`, `rearmed_elsewhere`)."""
        flags = once_flags(self.module.code_for_node(node.test))
        if not flags:
            return False
        reading = self._ast_if(node)
        return reading is not None and _runs_once(reading, reading.node.body, flags)

    def _initialises_once(self, statement: cst.CSTNode, test: cst.BaseExpression) -> bool:
        """`if self.initialized: return` followed by statements that set `self.initialized`
        on every path (themselves or through a method of the class they call): those run
        once."""
        if not isinstance(test, (cst.Attribute, cst.Call, cst.Comparison)):
            return False
        attribute = done_attribute(self.module.code_for_node(test))
        if attribute is None:
            return False
        reading = self._ast_if(statement)
        if reading is None:
            return False
        rest = reading.block[reading.index + 1 :]
        return _runs_once(reading, rest, [(attribute, False)])

    def _first_n_counter(self, statement: cst.If, holds: bool) -> bool:
        """`if self.seen[split] < N:`'s body, or what follows `cnt = self.seen[split]; if
        cnt > N: return`, with a counter some file of the project increments (a callback's
        `pl_module.seen[split] += 1`): it runs for the first N calls only. Read on `ast`
        with the project model's own reading (guards.first_n_counters, settled by the
        project's incremented attributes)."""
        key = (id(statement), "first-n-counter", holds)
        cached = self._guard_cache.get(key)
        if cached is not None:
            return bool(cached)
        result = False
        reading = self._ast_if(statement)
        test = reading.node.test if reading is not None else None
        if reading is not None and isinstance(test, (ast.Compare, ast.BoolOp)):
            text = ast.get_source_segment(self.source, test) or ast.unparse(test)
            if "<" in text or ">" in text:
                before = reading.block[: reading.index]
                names = first_n_counters(text, holds, counter_aliases(before))
                if names:
                    result = "rare" in settle_first_n(
                        frozenset(first_n_guards(names)), self._incremented
                    )
        self._guard_cache[key] = frozenset({"rare"}) if result else frozenset()
        return result

    def _incremented(self, name: str) -> bool:
        """Whether the project (this file alone, without a project model) increments an
        attribute named `name`."""
        view = self.analysis.view
        if view is not None:
            return view.model.incremented(name)
        if self._own_increments is None:
            tree = self.ast_tree
            self._own_increments = (
                frozenset(incremented_attributes(tree)) if tree is not None else frozenset()
            )
        return name in self._own_increments

    def _local_guards(
        self, node: cst.CSTNode, parents: dict[int, cst.CSTNode]
    ) -> tuple[set[str], cst.FunctionDef | None]:
        """The guard kinds between `node` and its function, and that function."""
        kinds: set[str] = set()
        child: cst.CSTNode = node
        ancestor = parents.get(id(node))
        innermost_block = True
        while ancestor is not None:
            if isinstance(ancestor, cst.If):
                test = ancestor.test
                if child is ancestor.body and self._lazy_block(ancestor):
                    kinds.add("rare")  # a lazy initialisation runs once
                if child is ancestor.body and (
                    self._first_n_block(ancestor, parents) or self._first_n_counter(ancestor, True)
                ):
                    kinds.add("rare")  # collects from the first N batches only
                if (
                    (child is ancestor.body and _warns_only(ancestor.body))
                    or (isinstance(child, cst.Else) and _warns_only(child.body))
                    or (child is ancestor.body and _reports_anomaly(test, ancestor.body))
                ):
                    kinds.add("rare")  # a branch that only warns: an abnormal condition
                if _unreachable_branch(ancestor, child, parents):
                    kinds.add("rare")  # never runs at all: rarer than rare
                # a device test counts in the body of `if cuda:` and the else of `if not cuda:`
                device = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
                if child is ancestor.body:
                    # each name and shape on its rare side: `if not self.debug:` is not rare
                    kinds |= self._condition_kinds(test, device=not device)
                elif child is ancestor.orelse:
                    # the else of `if batch_idx != 0:` / `if not self.debug:` is rare
                    kinds |= self._condition_kinds(test, negated=True, device=device)
            elif isinstance(ancestor, (cst.While, cst.IfExp)) and child is ancestor.body:
                kinds |= self._condition_kinds(ancestor.test)
                if isinstance(ancestor, cst.While) and self._first_n_block(ancestor, parents):
                    kinds.add("rare")
            elif isinstance(ancestor, cst.IfExp) and child is ancestor.orelse:
                kinds |= self._condition_kinds(ancestor.test, negated=True, device=False)
            elif isinstance(ancestor, cst.Assert) and child is ancestor.msg:
                kinds.add("rare")  # the message is evaluated only when the assertion fails
            elif isinstance(ancestor, cst.Raise):
                # `raise ValueError(f"... {x[mask]}")`: the exception (and its message) is
                # built only when the code raises: the error path, not every step.
                kinds.add("rare")
            elif isinstance(ancestor, cst.ExceptHandler) and child is ancestor.body:
                kinds.add("rare")  # a handler runs when the block raised: the error path
            elif isinstance(ancestor, cst.BooleanOperation) and child is ancestor.right:
                # `a and b`: `b` runs where `a` holds; `a or b`: where `a` fails
                fails = isinstance(ancestor.operator, cst.Or)
                kinds |= self._condition_kinds(ancestor.left, negated=fails, device=not fails)
            elif isinstance(ancestor, (cst.IndentedBlock, cst.Module)):
                for statement in ancestor.body:
                    if statement is child:
                        break
                    test = _early_exit_test(statement)
                    if test is not None:
                        kinds |= self._condition_kinds(test, negated=True)
                        if self._initialises_once(statement, test):
                            kinds.add("rare")  # `if self.initialized: return`: runs once
                        elif self._first_n_counter(statement, False):
                            kinds.add("rare")  # `if self.seen[k] > N: return`: first N
                if (
                    isinstance(ancestor, cst.IndentedBlock)
                    and innermost_block
                    and _raises_after(
                        ancestor,
                        child,
                        exits=not isinstance(parents.get(id(ancestor)), cst.FunctionDef),
                    )
                ):
                    # The error path: `print(t)` just before `raise` in the same block runs
                    # when the step fails, not every step. (Only the innermost block: an
                    # outer `raise` may be reached only by paths that skip the node.)
                    kinds.add("rare")
                innermost_block = False
            elif isinstance(ancestor, cst.FunctionDef):
                return kinds, ancestor
            elif isinstance(ancestor, (cst.ClassDef, cst.Lambda)):
                break
            child = ancestor
            ancestor = parents.get(id(ancestor))
        return kinds, None

    def condition_kinds(self, test: cst.BaseExpression) -> frozenset[str]:
        """The guard kinds ("rare", "device-check") a condition expression stands for."""
        return self._condition_kinds(test)

    def _condition_kinds(
        self, test: cst.BaseExpression, negated: bool = False, device: bool = True
    ) -> frozenset[str]:
        key = (id(test), negated, device)
        cached = self._guard_cache.get(key)
        if cached is not None:
            return cached
        resolve = self._method_resolver(test, self.parents)

        def predicate(name: str) -> str | None:
            method = resolve(name)
            returned = _single_return(method) if method is not None else None
            return self.module.code_for_node(returned) if returned is not None else None

        result = condition_kinds(self.module.code_for_node(test), negated, predicate, device)
        self._guard_cache[key] = result
        return result

    def _first_n_block(self, node: cst.If | cst.While, parents: dict[int, cst.CSTNode]) -> bool:
        """`if len(self.examples) < self.max_examples:` / `while self.n_logged < N:` whose
        body (or a method of the class it calls) grows that container or counter: it runs
        for the first N batches only; `if self.embs.shape[0] > limit:` whose body empties
        `self.embs`: once every `limit` samples (accumulate, then flush); `if now -
        self.last >= self.interval:` whose body moves `self.last`: once per interval."""
        key = (id(node), "first-n")
        cached = self._guard_cache.get(key)
        if cached is not None:
            return bool(cached)
        test = self.module.code_for_node(node.test)
        targets, flushed = first_n_targets(test), flush_targets(test)
        markers = marker_targets(test)
        changes = change_targets(test)
        result = False
        if targets or flushed or markers or changes:
            texts = [self.module.code_for_node(node.body)]
            resolve = self._method_resolver(node, parents)
            for name in _self_calls(node.body):
                method = resolve(name)
                if method is not None:
                    texts.append(self.module.code_for_node(method.body))
            result = (
                any(grows(text, target) for text in texts for target in targets)
                # `while self.n < N:` whose body sets `self.n`: the loop ends with the test
                # false and the attribute persists, so later steps skip it until N changes.
                or (
                    isinstance(node, cst.While)
                    and any(resets(text, target) for text in texts for target in targets)
                )
                or any(flushes(text, target) for text in texts for target in flushed)
                or any(resets(text, target) for text in texts for target in markers)
                or any(records(text, *change) for text in texts for change in changes)
            )
        self._guard_cache[key] = frozenset({"rare"}) if result else frozenset()
        return result

    # --- walk handlers (registered by the engine around the rules' own handlers) ------

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(self.analysis.klass(node))

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append(_FunctionScope(self.analysis.function(node)))
        self.aliases.depth += 1

    def _param_kind(self, param: cst.Param, index: int, hot: bool, info: FunctionInfo) -> ValueKind:
        name = param.name.value
        view = self.analysis.view
        entry = info.hot_reason == info.root_hook
        # `shared_step`, `eval_instance_step`: hot by its name, but only the project calls it
        # (Lightning calls the step methods).
        own_step = entry and info.name.endswith("_step") and info.name not in STEP_METHODS
        if view is not None and (not entry or info.name == "forward" or own_step):
            # A helper: what every call of the project passes it, when that is definite
            # (`getMinimumConnection(self.mat, self.max_N, ...)` with CPU tensors). A
            # sub-module's forward too, where every call of the project's own code (not its
            # tests) passes host data (`self.expand(h, h.shape[1])`); an inference script's
            # CPU tensors do not make the step's CPU. A step of the project's own, where
            # every call from the step passes host data or host copies (`target_full` of a
            # record the batch transfer leaves on the host); the step's device data it is
            # given stays presumed as in the step (its `file_names` are no tensors).
            passed = view.param_value(
                info.key, index, outside_tests=entry and not own_step, per_step=hot
            )
            host = _HOST_KIND_NAMES | {"cpu"} if own_step else _HOST_KIND_NAMES
            if (
                entry
                and passed is not None
                and passed.kind == "cpu"
                and not passed.mask
                and info.name == "forward"
                and view.called_every_step(info.key)
            ):
                # A sub-module's forward that only the step's code calls, every call passing a
                # CPU tensor (`lengths.cpu().int()` and what is computed from it): what the
                # step hands it is on the host, whatever an inference script would pass.
                host = host | {"cpu"}
            if (
                passed is not None
                and passed.kind != "unknown"
                and passed.elements is None
                and (not entry or (passed.kind in host and not passed.mask))
            ):
                return kind_named("device" if passed.mask else passed.kind)
        # The batch argument of a step method itself (index 0 is `self`); helpers called
        # from the step take anything as their first argument.
        batch_like = hot and (
            name in BATCH_PARAMS
            or (
                info.name == info.root_hook
                and (info.name.endswith("_step") or STEP_PART.search(info.name))
                and index <= 1
            )
        )
        if param.annotation is not None:
            annotation = self.module.code_for_node(param.annotation.annotation).replace(" ", "")
            if batch_like and _CONTAINER_ANNOTATION.match(annotation):
                return DEVICE  # `batch: dict` holds the step's tensors
            if annotation in HOST_ANNOTATIONS:
                return HOST
            said = annotation_kind(annotation)
            if said is not None:
                # `core_model: nn.Module` (`.cpu()` is an offload), `seqs: List[str]`
                return kind_named(said) if said != "number" else HOST
            if annotation.endswith("Tensor"):
                held = view.passed_containers(info.key, index) if view is not None else None
                if held is not None:
                    # Every call passes a list, tuple or dict it builds (or a constant): not a
                    # tensor, whatever the annotation says; its items are what the elements
                    # are (a list of the step's tensors), else not known.
                    return DEVICE if hot and held.kind == "device" else UNKNOWN
                return DEVICE if hot else UNKNOWN
        if param.default is not None and isinstance(
            param.default, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)
        ):
            # `mask=None` is an optional tensor as often as an optional setting.
            if isinstance(param.default, cst.Name) and param.default.value == "None":
                return UNKNOWN
            return HOST
        if name == "pl_module":
            return ValueKind.MODULE
        if name == "outputs" and hot and info.name in _BATCH_END_HOOKS:
            # `on_train_batch_end(..., outputs, ...)`: what the step returned, its tensors
            # still on the device.
            return DEVICE
        if name == "outputs" and hot:
            return UNKNOWN
        if name in _HOST_PARAMS:
            return HOST
        if batch_like:
            return DEVICE
        if (
            hot
            and info.cls is not None
            and param.annotation is None
            and param.default is None
            and (
                (info.name == "forward" and info.cls.kind & ClassKind.TORCH_MODULE)
                or (info.name == "update" and info.cls.kind & ClassKind.METRIC)
            )
        ):
            # An nn.Module's forward and a metric's update take tensors, except what their
            # names say are shapes or counts (`hw_shape`, `output_size`, `num_frames`), and
            # what every call hands down from a caller's optional parameter (`step=None`).
            if _SHAPE_PARAM.search(name) or (
                view is not None and view.forwarded_optional(info.key, index)
            ):
                return UNKNOWN
            return DEVICE
        return UNKNOWN

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.pop()
        self.aliases.depth -= 1

    def visit_Import(self, node: cst.Import) -> None:
        self.aliases.bind_import(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.aliases.bind_import_from(node)

    ENTER_HANDLERS = (
        "visit_ClassDef",
        "visit_FunctionDef",
        "visit_Import",
        "visit_ImportFrom",
        *(f"visit_{name}" for name in _STATEMENTS),
    )
    LEAVE_HANDLERS = (
        "leave_ClassDef",
        "leave_FunctionDef",
        *(f"leave_{name}" for name in _STATEMENTS),
    )


def _loop_steps(loop: cst.For | cst.While) -> bool:
    """Whether a loop's body takes an optimizer step (as tpulint.analysis.scope_facts reads
    training loops)."""
    from tpulint.analysis.walker import iter_children

    stack: list[cst.CSTNode] = [loop.body]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call) and isinstance(current.func, cst.Attribute):
            name = current.func.attr.value
            if name in ("backward", "optimizer_step", "manual_backward"):
                return True
            receiver = dotted_name(current.func.value) or ""
            if name == "step" and "opt" in receiver.lower():
                return True
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(iter_children(current))
    return False


def _epoch_loop(loop: cst.For | cst.While) -> bool:
    """`for epoch in range(n):` whose body steps only in loops of its own, none over
    optimizers (as tpulint.analysis.scope_facts reads epoch loops): its body beside them
    runs once an epoch."""
    from tpulint.analysis.walker import iter_children

    if not isinstance(loop, cst.For) or not _counts(loop.iter):
        return False
    inner: list[cst.For | cst.While] = []
    stack: list[cst.CSTNode] = [loop.body]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.For, cst.While)):
            if _loop_steps(current):
                inner.append(current)
            continue
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(current, cst.Call) and isinstance(current.func, cst.Attribute):
            name = current.func.attr.value
            receiver = dotted_name(current.func.value) or ""
            if name in ("backward", "optimizer_step", "manual_backward") or (
                name == "step" and "opt" in receiver.lower()
            ):
                return False  # a step of its own
        stack.extend(iter_children(current))
    return bool(inner) and not any(
        isinstance(node, cst.For) and "opt" in cst.Module([]).code_for_node(node.iter).lower()
        for node in inner
    )


def _counts(iterator: cst.BaseExpression) -> bool:
    """`range(n)`, `trange(n)`, `tqdm(range(n))`: a loop counting turns."""
    if not isinstance(iterator, cst.Call):
        return False
    name = (dotted_name(iterator.func) or "").rsplit(".", 1)[-1]
    if name in ("range", "trange"):
        return True
    return name == "tqdm" and bool(iterator.args) and _counts(iterator.args[0].value)


class _AstIf(NamedTuple):
    """An `if` statement read with `ast`: the node, the class around it, and its block."""

    node: ast.If
    cls: ast.ClassDef | None
    block: list[ast.stmt]
    index: int


def _ast_ifs(body: list[ast.stmt], cls: ast.ClassDef | None) -> Iterator[_AstIf]:
    """The `if` statements of a block and of the blocks inside it, in source order."""
    for index, statement in enumerate(body):
        if isinstance(statement, ast.If):
            yield _AstIf(statement, cls, body, index)
        inner = statement if isinstance(statement, ast.ClassDef) else cls
        for field_name in ("body", "handlers", "orelse", "finalbody", "cases"):
            for child in getattr(statement, field_name, ()) or ():
                if isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    yield from _ast_ifs(child.body, inner)
            blocks = getattr(statement, field_name, None)
            if blocks and isinstance(blocks, list) and isinstance(blocks[0], ast.stmt):
                yield from _ast_ifs(blocks, inner)


def _preorder(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    from tpulint.analysis.walker import iter_children

    stack: list[cst.CSTNode] = [root]
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, cst.BaseExpression):
            continue  # no statements inside an expression
        stack.extend(reversed(list(iter_children(current))))


def _runs_once(reading: _AstIf, body: list[ast.stmt], flags: list[tuple[str, bool]]) -> bool:
    """Whether `body` ends one of its run-once guard's `flags` on every path, and no other
    method of the class (`__init__` aside) arms it again."""
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    if reading.cls is not None:
        methods = {
            s.name: s
            for s in reading.cls.body
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
    inside = {id(n) for statement in body for n in ast_walk(statement)}
    return any(
        always_sets_flag(body, attribute, clears, methods)
        and not rearmed_elsewhere(methods, attribute, clears, inside)
        for attribute, clears in flags
    )


def _walk(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    from tpulint.analysis.walker import iter_children

    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(iter_children(node))


def _none_test(test: cst.BaseExpression) -> tuple[str, bool] | None:
    """`x is None` -> ("x", True), `x is not None` -> ("x", False), else None."""
    if not (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.left, cst.Name)
        and isinstance(test.comparisons[0].comparator, cst.Name)
        and test.comparisons[0].comparator.value == "None"
    ):
        return None
    operator = test.comparisons[0].operator
    if isinstance(operator, cst.Is):
        return test.left.value, True
    if isinstance(operator, cst.IsNot):
        return test.left.value, False
    return None


def _binds(statement: cst.CSTNode, name: str) -> bool:
    """Whether `statement` may rebind `name` anywhere in it (an assignment, a loop or `with`
    target, `del`)."""
    for node in _walk(statement):
        targets: list[cst.BaseExpression] = []
        if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For)):
            targets.append(node.target)
        elif isinstance(node, cst.AsName):
            targets.append(node.name)  # type: ignore[arg-type]
        elif isinstance(node, cst.Del):
            targets.append(node.target)
        for target in targets:
            if any(isinstance(n, cst.Name) and n.value == name for n in _walk(target)):
                return True
    return False


def _sets_when_none(statement: cst.CSTNode, name: str) -> bool:
    """`if name is None: ...; name = <value>` with no `else`: `name` is not None after it
    (the value is not the literal `None`)."""
    if not (
        isinstance(statement, cst.If)
        and statement.orelse is None
        and _none_test(statement.test) == (name, True)
        and isinstance(statement.body, cst.IndentedBlock)
    ):
        return False
    for line in statement.body.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            if (
                isinstance(small, cst.Assign)
                and any(
                    isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets
                )
                and not (isinstance(small.value, cst.Name) and small.value.value == "None")
            ):
                return True
    return False


def _unreachable_branch(
    branch_owner: cst.If, child: cst.CSTNode, parents: dict[int, cst.CSTNode]
) -> bool:
    """Whether `child`, a branch of `branch_owner`, runs only when a name is None that the
    code before the `if` surely set: `if n is None: n = len(x)` and then
    `if n is not None: ... else: <never runs>` (or `if n is None: <never runs>`); or when
    the test is a constant that says it does not (`if False:`, `if 0:`, `if True: ... else:`)."""
    test = branch_owner.test
    if isinstance(test, (cst.Name, cst.Integer)) and (
        isinstance(test, cst.Integer) or test.value in ("True", "False")
    ):
        holds = test.value not in ("False", "0")
        return (child is branch_owner.body) != holds
    tested = _none_test(branch_owner.test)
    if tested is None:
        return False
    name, is_none = tested
    in_body = child is branch_owner.body
    if in_body != is_none:
        return False  # this branch runs when the name is not None
    top: cst.CSTNode = branch_owner
    parent = parents.get(id(top))
    while isinstance(parent, cst.If) and parent.orelse is top:  # an `elif` chain
        top = parent
        parent = parents.get(id(top))
    if not isinstance(parent, (cst.IndentedBlock, cst.Module)):
        return False
    surely_set = False
    for statement in parent.body:
        if statement is top:
            return surely_set
        if _sets_when_none(statement, name):
            surely_set = True
        elif _binds(statement, name):
            surely_set = False
    return False


def _callee_name(call: cst.Call) -> str:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def _reports_anomaly(test: cst.BaseExpression, block: cst.BaseSuite) -> bool:
    """A branch that only prints or logs under a check of a tensor for bad values
    (`if torch.isnan(loss).any(): print(loss.item())`): it runs when the step goes wrong
    (summary._reports_anomaly)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    if not isinstance(test, cst.Call):
        return False
    names = {_callee_name(n) for n in _cst_calls(test)}
    if _callee_name(test) not in ANOMALY_REDUCTIONS and not names & ANOMALY_CHECKS:
        return False
    return _only_calls(block, is_report_callee)


def _cst_calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            yield current
        stack.extend(current.children)


def _warns_only(block: cst.BaseSuite) -> bool:
    """Whether every statement of a branch is a warning call (`warnings.warn(...)`,
    `logger.warning(...)`): the branch reports an abnormal condition."""
    return _only_calls(block, is_warning_callee)


def _only_calls(block: cst.BaseSuite, callee_test: Callable[[str], bool]) -> bool:
    """Whether the block has statements and each is a call whose callee passes the test."""
    statements = list(block.body) if isinstance(block, cst.IndentedBlock) else [block]
    smalls = []
    for statement in statements:
        if not isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return False
        smalls.extend(statement.body)
    return bool(smalls) and all(
        isinstance(small, cst.Expr)
        and isinstance(small.value, cst.Call)
        and (callee := dotted_name(small.value.func)) is not None
        and callee_test(callee)
        for small in smalls
    )


def _raises_after(block: cst.IndentedBlock, child: cst.CSTNode, exits: bool = True) -> bool:
    """Whether the block raises (or, when `exits`, ends the program: `sys.exit(1)`),
    unconditionally, after `child`: `child` is on an error path (a message printed before
    `raise ValueError(...)`). A function's own body that ends the program is debugging code
    that runs (`print(x.shape); exit()` at the end of a step), not an error path."""
    seen = False
    for statement in block.body:
        if statement is child:
            seen = True
            continue
        if (
            seen
            and isinstance(statement, cst.SimpleStatementLine)
            and any(
                isinstance(small, cst.Raise) or (exits and _ends_program(small))
                for small in statement.body
            )
        ):
            return True
    return False


def _ends_program(small: cst.BaseSmallStatement) -> bool:
    """`raise ...` or a call that ends the program (python_ast.PROGRAM_EXITS) as a statement."""
    if isinstance(small, cst.Raise):
        return True
    return (
        isinstance(small, cst.Expr)
        and isinstance(small.value, cst.Call)
        and dotted_name(small.value.func) in PROGRAM_EXITS
    )


def _single_return(method: cst.FunctionDef) -> cst.BaseExpression | None:
    """`EXPR` of a method whose body is `return EXPR` (after an optional docstring)."""
    body = method.body
    statements = list(body.body) if isinstance(body, cst.IndentedBlock) else [body]
    if (
        statements
        and isinstance(statements[0], cst.SimpleStatementLine)
        and len(statements) > 1
        and isinstance(statements[0].body[0], cst.Expr)
        and isinstance(statements[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    ):
        statements = statements[1:]
    if len(statements) != 1:
        return None
    only = statements[0]
    if isinstance(only, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        small = only.body
        if len(small) == 1 and isinstance(small[0], cst.Return):
            return small[0].value
    return None


def _self_calls(node: cst.CSTNode) -> list[str]:
    """The names of the methods `self.<name>(...)` calls under `node` call."""
    from tpulint.analysis.walker import iter_children

    names: list[str] = []
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if (
            isinstance(current, cst.Call)
            and isinstance(current.func, cst.Attribute)
            and isinstance(current.func.value, cst.Name)
            and current.func.value.value == "self"
        ):
            names.append(current.func.attr.value)
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(iter_children(current))
    return names


def _early_exit_test(statement: cst.CSTNode) -> cst.BaseExpression | None:
    """`if TEST: return` (or continue/raise) with no else: the code after it runs under
    `not TEST`: its names and shape are read where it fails
    (`if step % n != 0: return`)."""
    if not isinstance(statement, cst.If) or statement.orelse is not None:
        return None
    body = statement.body
    if isinstance(body, cst.IndentedBlock) and len(body.body) == 1:
        only = body.body[0]
    elif isinstance(body, cst.SimpleStatementSuite):
        only = body
    else:
        return None
    is_simple = isinstance(only, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
    small = only.body if is_simple else None
    if small and len(small) == 1 and isinstance(small[0], (cst.Return, cst.Continue, cst.Raise)):
        return statement.test
    return None


def is_self_call(node: cst.Call, *methods: str) -> bool:
    """`self.<method>(...)` for one of `methods` (any method when none are given)."""
    func = node.func
    return (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value == "self"
        and (not methods or func.attr.value in methods)
    )


def call_name(node: cst.Call) -> str | None:
    """The dotted text of the called expression (`self.log`, `torch.nonzero`)."""
    return dotted_name(node.func)


def get_arg(node: cst.Call, keyword: str, position: int | None = None) -> cst.Arg | None:
    """The argument passed as `keyword=` or at `position` (positional), like TorchFix."""
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    if position is not None:
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if len(positional) > position:
            return positional[position]
    return None


def has_star_args(node: cst.Call) -> bool:
    return any(arg.star for arg in node.args)


def _module_binds(
    model: Any, module_name: str, name: str, near: Any, depth: int, table: str
) -> bool:
    """Whether the project module `module_name` has `name` in its summary's `table` (a
    name bound once to a CPU tensor it never moves: `cpu_constants`; only to a string
    literal: `string_constants`), or re-exports such a name of another module (`from
    .constants import MASK` in a package's `__init__`)."""
    if depth > 4 or not module_name:
        return False
    module = model.module_named(module_name, near)
    if module is None:
        return False
    if name in getattr(module, table):
        return True
    target = module.imports.get(name)
    if target is None or "." not in target:
        return False
    inner, _, last = target.rpartition(".")
    return _module_binds(model, inner, last, module, depth + 1, table)
