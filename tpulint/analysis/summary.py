"""One file's summary for the project model, read with Python's `ast` (about 14 times cheaper
than libcst on the same file) and cached by content.

A summary holds what the project model needs to answer questions across files, and nothing
that depends on other files:

- the module's name, its imports (local name -> qualified name, relative imports resolved);
- its classes: qualified bases (through the imports visible where the class is defined),
  methods, and what `self.<attr>` is assigned (a sub-module, a numpy generator, a buffer);
- its functions and methods, keyed like the per-file analysis keys them
  (`Class.method#0`: the qualified name and the index among definitions of that name);
- for each function, its calls (`self.m(...)`, `helper(...)`, `mod.f(...)`,
  `self.loss_fn(...)`, `self.metric.update(...)`) with their line and the guards they sit
  under, and what it returns, as value atoms to be resolved by the model (a tensor, a
  number, its parameter 0, the result of `self._loss(...)`, a tuple of those).

Value atoms (JSON-friendly, so summaries cache as they are):
    "device" "cpu" "mask" "module" "numpy" "number" "host" "unknown"   concrete kinds
    ["p", i]                       the function's parameter i
    ["c", form, target, [args]]    the result of a call (args: atoms of positional args)
    ["a", name]                    the value of `self.<name>`
    ["i", target]                  an instance of the class `target` (a constructor call)
    ["t", [atoms], ...]            a tuple of values
    ["e", i, [atoms]]              element i of a tuple value
    ["mv", kind, [atoms]]          the atoms moved to `kind` ("cpu"/"device"), unless they
                                   resolve to a module (`make_model().to(device)`)
    ["m", atom, ...]               a boolean mask when the atoms are tensors
                                   (`x > 0` on a parameter `x`)
"""

from __future__ import annotations

import ast
import bisect
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

from tpulint.analysis.guards import RARE, condition_kinds, lazy_attribute
from tpulint.analysis.hooks import is_cold_name

Atom = Any  # str | list (see the module docstring)

# Top-level packages whose values are never torch tensors.
NUMPY_ROOTS = frozenset({"numpy", "pandas", "scipy", "cupy", "jax", "jaxlib", "mlx"})
NUMBER_ROOTS = frozenset({"math", "statistics", "random", "time", "operator"})
HOST_ROOTS = frozenset(
    {
        "os",
        "sys",
        "re",
        "json",
        "itertools",
        "functools",
        "collections",
        "string",
        "datetime",
        "pathlib",
        "typing",
        "warnings",
        "logging",
        "PIL",
        "cv2",
        "librosa",
        "soundfile",
        "sklearn",
        "tensorflow",
        "decimal",
        "fractions",
    }
)
NUMBER_BUILTINS = frozenset({"len", "int", "float", "round", "abs", "hash", "id", "ord", "bool"})
HOST_BUILTINS = frozenset(
    {
        "str",
        "range",
        "list",
        "tuple",
        "dict",
        "set",
        "enumerate",
        "zip",
        "sorted",
        "repr",
        "isinstance",
        "hasattr",
        "getattr",
        "type",
        "chr",
        "format",
        "print",
        "open",
    }
)
TORCH_FACTORIES = frozenset(
    {
        "tensor",
        "as_tensor",
        "from_numpy",
        "zeros",
        "ones",
        "empty",
        "full",
        "rand",
        "randn",
        "randint",
        "randperm",
        "arange",
        "linspace",
        "logspace",
        "eye",
        "Tensor",
        "LongTensor",
        "FloatTensor",
        "BoolTensor",
        "IntTensor",
        "bernoulli",
        "normal",
        "scalar_tensor",
    }
)
LIKE_FACTORIES = frozenset(
    {"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like"}
)
# torch functions whose result is a boolean mask.
TORCH_MASK_FUNCTIONS = frozenset(
    {
        "isnan",
        "isinf",
        "isfinite",
        "isneginf",
        "isposinf",
        "logical_and",
        "logical_or",
        "logical_not",
        "logical_xor",
        "eq",
        "ne",
        "gt",
        "lt",
        "ge",
        "le",
        "greater",
        "less",
        "greater_equal",
        "less_equal",
        "not_equal",
        "isin",
        "signbit",
        "isclose",
    }
)
MASK_METHODS = frozenset(
    {
        "bool",
        "eq",
        "ne",
        "gt",
        "lt",
        "ge",
        "le",
        "logical_and",
        "logical_or",
        "logical_not",
        "logical_xor",
        "isnan",
        "isinf",
        "isfinite",
        "isin",
        "__eq__",
        "__ne__",
    }
)
# Methods whose result is a Python number or a host value whatever the receiver.
NUMBER_METHODS = frozenset({"item", "size", "dim", "numel", "nelement", "ndimension", "__len__"})
HOST_METHODS = frozenset({"tolist", "keys", "values", "items", "get_device", "data_ptr"})
TENSOR_ATTRIBUTES_HOST = frozenset(
    {"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "layout", "is_leaf"}
)
# Methods of a torch module object that return the module itself.
MODULE_SELF_METHODS = frozenset(
    {"cpu", "cuda", "to", "train", "eval", "float", "half", "double", "bfloat16", "requires_grad_"}
)
SELF_HOST_ATTRIBUTES = frozenset(
    {
        "device",
        "dtype",
        "hparams",
        "trainer",
        "current_epoch",
        "global_step",
        "global_rank",
        "local_rank",
        "training",
        "automatic_optimization",
        "logger",
        "loggers",
        "precision",
        "on_gpu",
        "config",
        "cfg",
        "args",
    }
)
_MAX_ATOMS = 8
TENSOR_METHODS_OF_MODULES = frozenset(
    {"forward", "generate", "encode", "decode", "embed", "sample", "infer", "predict"}
)
# Packages whose functions are never project functions: their calls' arguments are not kept.
_EXTERNAL = frozenset(
    {
        "torch",
        "numpy",
        "math",
        "os",
        "sys",
        "re",
        "json",
        "logging",
        "warnings",
        "typing",
        "functools",
        "itertools",
        "collections",
        "einops",
        "time",
        "random",
        "pathlib",
        "copy",
        "inspect",
        "dataclasses",
    }
)
# Code that splits data by process: reads the rank or world size, or shards by node.
RANK_TOKENS = (
    "rank",
    "world_size",
    "ordinal",
    "num_replicas",
    "split_by_node",
    "node_split",
    ".shard(",
    "process_index",
    "num_processes",
)
# Where a rank comes from other than torch.distributed, which Lightning's XLA strategy never
# initialises: the trainer's or torch_xla's rank and world size, a sampler's replicas, a
# node split. (A bare `rank` is a name: it may hold any of them.)
RANK_SOURCES = re.compile(
    r"global_rank|local_rank|ordinal|num_replicas|split_by_node|node_split|\.shard\("
    r"|process_index|num_processes|(?<!get_)world_size"
)
# torch.distributed's rank and world size: under a TPU Trainer, rank 0 of 1 on every core.
_DIST_ALIAS = re.compile(
    r"^\s*(?:import\s+torch\.distributed\s+as\s+(\w+)|from\s+torch\s+import\s+distributed"
    r"\s+as\s+(\w+))",
    re.MULTILINE,
)


def distributed_rank_pattern(text: str) -> re.Pattern[str]:
    """Calls of torch.distributed's get_rank/get_world_size in `text`, through its aliases."""
    aliases = {"torch.distributed", "dist"}
    for found in _DIST_ALIAS.finditer(text):
        aliases.add(found.group(1) or found.group(2))
    names = "|".join(sorted(re.escape(a) for a in aliases))
    bare = r"(?<![\w.])" if re.search(r"from\s+torch\.distributed\s+import", text) else r"(?!)"
    return re.compile(rf"(?:\b(?:{names})\.|{bare})(?:get_rank|get_world_size)\s*\(")


# `use_distributed_sampler=False` (or Lightning 1.x's `replace_sampler_ddp=False`): the file
# turns Lightning's sampler injection off, so every hand-built sampler of the project counts.
SAMPLER_INJECTION_OFF = re.compile(
    r"\b(use_distributed_sampler|replace_sampler_ddp)\b\s*[=:]\s*False\b"
)


@dataclass
class CallSite:
    """A call in a function body.

    form: "self" (`self.m(...)`, target `m`), "super" (`super().m(...)`), "attr"
    (`self.x(...)`, target `x`; `self.x.m(...)`, target `x.m`), "name" (a name or dotted
    name: the qualified target through the imports, or `.f` / `.Cls.m` for a name of the
    module itself), "inst" (`v.m(...)` / `v(...)` on a local `v = Cls(...)`: target
    `Cls.m` / `Cls.__call__`, qualified like "name")."""

    form: str
    target: str
    line: int
    guards: tuple[str, ...] = ()
    args: list[list[Atom]] = field(default_factory=list)  # atoms of the positional arguments
    keywords: dict[str, list[Atom]] = field(default_factory=dict)

    def to_json(self) -> list[Any]:
        return [self.form, self.target, self.line, list(self.guards), self.args, self.keywords]

    @classmethod
    def from_json(cls, data: list[Any]) -> CallSite:
        return cls(data[0], data[1], data[2], tuple(data[3]), data[4], data[5])


@dataclass
class FunctionSummary:
    key: str  # `qualname#index`
    name: str
    qualname: str
    line: int
    cls: str | None  # the qualname of the class this is a method of
    parent: str | None  # the key of the enclosing function of a nested function
    params: list[str]
    bound: bool  # called through an instance (a method that is not a staticmethod)
    decorators: list[str]
    calls: list[CallSite] = field(default_factory=list)
    returns: list[list[Atom]] = field(default_factory=list)  # atoms of each `return`
    returns_annotation: str | None = None
    const_return: int | None = None  # the int literal every `return` returns (`__len__`)
    rank_aware: bool = False  # its code reads the rank or world size (see RANK_TOKENS)
    dist_rank: bool = False  # ... from torch.distributed (get_rank, get_world_size)
    rank_source: bool = False  # ... from elsewhere (RANK_SOURCES)
    # The lines of its code, decorators included (first, last): where its findings can be.
    span: tuple[int, int] = (0, 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "sp": list(self.span),
            "k": self.key,
            "n": self.name,
            "q": self.qualname,
            "l": self.line,
            "c": self.cls,
            "p": self.parent,
            "a": self.params,
            "b": self.bound,
            "d": self.decorators,
            "x": [c.to_json() for c in self.calls],
            "r": self.returns,
            "ra": self.returns_annotation,
            "cr": self.const_return,
            "rk": self.rank_aware,
            "dr": self.dist_rank,
            "rs": self.rank_source,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FunctionSummary:
        return cls(
            data["k"],
            data["n"],
            data["q"],
            data["l"],
            data["c"],
            data["p"],
            data["a"],
            data["b"],
            data["d"],
            [CallSite.from_json(c) for c in data["x"]],
            data["r"],
            data["ra"],
            data["cr"],
            data["rk"],
            data.get("dr", False),
            data.get("rs", False),
            tuple(data["sp"]),  # type: ignore[arg-type]
        )


@dataclass
class ClassSummary:
    name: str
    qualname: str
    line: int
    bases: list[str]  # qualified (`torch.nn.Module`) or module-local (`.Base`)
    methods: dict[str, str] = field(default_factory=dict)  # name -> function key
    attributes: dict[str, list[Atom]] = field(default_factory=dict)  # self.<name> values
    # `self.<name> = <parameter>` in `__init__`: the parameter's index (dataset lengths)
    param_attributes: dict[str, int] = field(default_factory=dict)
    # The class's code reads the process rank or world size (a dataset that shards itself),
    # from torch.distributed, from elsewhere.
    rank_aware: bool = False
    dist_rank: bool = False
    rank_source: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.name,
            "q": self.qualname,
            "l": self.line,
            "b": self.bases,
            "m": self.methods,
            "a": self.attributes,
            "pa": self.param_attributes,
            "ra": self.rank_aware,
            "dr": self.dist_rank,
            "rs": self.rank_source,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClassSummary:
        return cls(
            data["n"],
            data["q"],
            data["l"],
            data["b"],
            data["m"],
            data["a"],
            data["pa"],
            data.get("ra", False),
            data.get("dr", False),
            data.get("rs", False),
        )


@dataclass(frozen=True)
class Syntax:
    """What a file's code contains, whatever the scope (module level, classes, functions,
    lambdas): the facts the rules' screens read to rule a file out without parsing it with
    libcst (`Rule.can_fire`). Every set over-approximates what a libcst walk of the same code
    can meet, so a screen that asks for one of these never skips a file the rule fires in.

    calls: the last name of every called expression (`f(...)` -> `f`, `a.b.c(...)` -> `c`),
    plus the last name of every imported name bound under an alias (`from torch.cuda.amp
    import autocast as ac` -> `autocast`), so that a call the imports qualify to `x.y.name`
    always has `name` here. keywords: keyword argument names of calls. literal_keywords: those
    given a literal (a number, string or f-string, a signed number, True/False/None).
    class_fields: names assigned in class bodies (`precision: str = "16"`). int_names: names
    given an integer literal other than by a keyword argument: parameter defaults
    (`batch_size=10`), assignments to a name or an attribute (`args.batch_size = 10`, also
    `= field(default=10)`), string keys of dict entries (`{"batch_size": 10}`)."""

    calls: frozenset[str] = frozenset()
    keywords: frozenset[str] = frozenset()
    literal_keywords: frozenset[str] = frozenset()
    class_fields: frozenset[str] = frozenset()
    int_names: frozenset[str] = frozenset()

    def to_json(self) -> list[list[str]]:
        return [
            sorted(self.calls),
            sorted(self.keywords),
            sorted(self.literal_keywords),
            sorted(self.class_fields),
            sorted(self.int_names),
        ]

    @classmethod
    def from_json(cls, data: list[list[str]]) -> Syntax:
        return cls(*(frozenset(part) for part in data))


def syntax_of(tree: ast.AST) -> Syntax:
    """The Syntax facts of a parsed tree, in one iterative walk (with the summary's table of
    child fields and no visit of names and constants, which hold nothing asked here: 2.4 times
    faster than `ast.walk`, measured)."""
    calls: set[str] = set()
    keywords: set[str] = set()
    literal: set[str] = set()
    fields: set[str] = set()
    ints: set[str] = set()
    call_type, name_type, attribute_type = ast.Call, ast.Name, ast.Attribute
    functions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    constant_type, unary_type = ast.Constant, ast.UnaryOp
    literal_types = (ast.Constant, ast.JoinedStr)
    leaves = (name_type, constant_type)
    node_type = ast.AST
    stack: list[ast.AST] = [tree]
    push, pop = stack.append, stack.pop
    while stack:
        node = pop()
        kind = type(node)
        if kind is call_type:
            func = node.func  # type: ignore[attr-defined]
            if type(func) is attribute_type:
                calls.add(func.attr)
            elif type(func) is name_type:
                calls.add(func.id)
            for keyword in node.keywords:  # type: ignore[attr-defined]
                name = keyword.arg
                if name is None:
                    continue
                keywords.add(name)
                value = keyword.value
                if type(value) is unary_type:
                    value = value.operand
                if isinstance(value, literal_types):
                    literal.add(name)
        elif kind is ast.ClassDef:
            for statement in node.body:  # type: ignore[attr-defined]
                if type(statement) is ast.Assign:
                    for target in statement.targets:
                        if type(target) is name_type:
                            fields.add(target.id)
                elif type(statement) is ast.AnnAssign and type(statement.target) is name_type:
                    fields.add(statement.target.id)
        elif kind is ast.Import or kind is ast.ImportFrom:
            for alias in node.names:  # type: ignore[attr-defined]
                if alias.asname is not None:
                    calls.add(alias.name.rsplit(".", 1)[-1])
            continue
        elif kind is ast.Assign or kind is ast.AnnAssign:
            if _int_value(node.value):  # type: ignore[attr-defined]
                targets = node.targets if kind is ast.Assign else [node.target]  # type: ignore[attr-defined]
                for target in targets:
                    if type(target) is name_type:
                        ints.add(target.id)
                    elif type(target) is attribute_type:
                        ints.add(target.attr)
        elif kind in functions:
            arguments = node.args  # type: ignore[attr-defined]
            positional = [*arguments.posonlyargs, *arguments.args]
            defaults = arguments.defaults
            for argument, default in zip(
                positional[len(positional) - len(defaults) :], defaults, strict=True
            ):
                if _int_value(default):
                    ints.add(argument.arg)
            for argument, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
                if default is not None and _int_value(default):
                    ints.add(argument.arg)
        elif kind is ast.Dict:
            for key, value in zip(node.keys, node.values, strict=True):  # type: ignore[attr-defined]
                if type(key) is constant_type and type(key.value) is str and _int_value(value):
                    ints.add(key.value)
        for field_name in _child_fields(kind):
            child = getattr(node, field_name)
            if type(child) is list:
                for item in child:
                    if isinstance(item, node_type) and type(item) not in leaves:
                        push(item)
            elif isinstance(child, node_type) and type(child) not in leaves:
                push(child)
    return Syntax(
        frozenset(calls),
        frozenset(keywords),
        frozenset(literal),
        frozenset(fields),
        frozenset(ints),
    )


def _int_value(node: ast.expr | None) -> bool:
    """An integer literal, or a call given one as `default=` (`field(default=10)`)."""
    if type(node) is ast.Call:
        node = next((k.value for k in node.keywords if k.arg == "default"), None)
    return type(node) is ast.Constant and type(node.value) is int  # type: ignore[union-attr]


@dataclass
class ModuleSummary:
    path: str
    module: str | None
    is_package: bool
    imports: dict[str, str] = field(default_factory=dict)  # module-level bindings, last wins
    classes: list[ClassSummary] = field(default_factory=list)
    functions: list[FunctionSummary] = field(default_factory=list)
    parsed: bool = True  # False when `ast` could not parse the file
    sampler_injection_off: bool = False  # see SAMPLER_INJECTION_OFF
    # What the code contains, for the rules' screens (None when `ast` could not parse it).
    syntax: Syntax | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "m": self.module,
            "pk": self.is_package,
            "i": self.imports,
            "c": [c.to_json() for c in self.classes],
            "f": [f.to_json() for f in self.functions],
            "ok": self.parsed,
            "so": self.sampler_injection_off,
            "sx": self.syntax.to_json() if self.syntax is not None else None,
        }

    @classmethod
    def from_json(cls, path: str, data: dict[str, Any]) -> ModuleSummary:
        return cls(
            path,
            data["m"],
            data["pk"],
            data["i"],
            [ClassSummary.from_json(c) for c in data["c"]],
            [FunctionSummary.from_json(f) for f in data["f"]],
            data["ok"],
            data["so"],
            Syntax.from_json(data["sx"]) if data["sx"] is not None else None,
        )


def resolve_relative(module: str | None, is_package: bool, level: int, target: str) -> str | None:
    """The absolute module for `from <level dots><target> import ...` inside `module`."""
    if level == 0:
        return target
    if module is None:
        return None
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    if target:
        base.append(target)
    return ".".join(base) if base else None


def summarize(text: str, path: str, module: str | None, is_package: bool) -> ModuleSummary:
    """The summary of one file (an empty one, `parsed=False`, if `ast` rejects it)."""
    summary = ModuleSummary(path, module, is_package)
    summary.sampler_injection_off = bool(SAMPLER_INJECTION_OFF.search(text))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        summary.parsed = False
        return summary
    try:
        summary.syntax = syntax_of(tree)
        _Summarizer(summary, text).module(tree)
    except RecursionError:
        summary.parsed = False
        summary.syntax = None
    return summary


def dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _is_super_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


@dataclass
class _Scope:
    """The state of one function body being summarized."""

    info: FunctionSummary | None
    imports: dict[str, str]  # visible import bindings (module ones, then local)
    env: dict[str, list[Atom]] = field(default_factory=dict)  # local name -> value atoms
    instances: dict[str, str] = field(default_factory=dict)  # local name -> constructor target
    # The conditions the current code runs under (ast expressions, or guard kinds), turned
    # into guard kinds only where a call is recorded.
    guards: tuple[Any, ...] = ()
    cls: ClassSummary | None = None  # the class whose method this is (through nesting)
    # Whether calls are recorded: not in hooks that never run per step (`__init__`, `setup`,
    # `on_*_epoch_end`), which no hot chain enters.
    record_calls: bool = True
    # Per enclosing `if` branch: name -> its value before the branch (`_MISSING` if unbound).
    journals: list[dict[str, Any]] = field(default_factory=list)


class _Summarizer:
    def __init__(self, summary: ModuleSummary, text: str) -> None:
        self.summary = summary
        self.text = text
        self._line_starts: list[int] | None = None
        self._conditions: dict[int, frozenset[str]] = {}
        # class qualname -> its methods (a lazy-initialisation block may call one that sets
        # the flag it tests).
        self.class_methods: dict[str, dict[str, ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        # Lines that read the rank or world size, where classes may be datasets (only their
        # rank-awareness is ever asked).
        self.rank_lines: list[int] = []
        self.dist_rank_lines: list[int] = []
        self.rank_source_lines: list[int] = []
        if "Dataset" in text or "DataPipe" in text or "Iterable" in text:
            self.rank_lines = self._lines_with(RANK_TOKENS)
            if self.rank_lines:
                self.dist_rank_lines = self._lines_matching(distributed_rank_pattern(text))
                self.rank_source_lines = self._lines_matching(RANK_SOURCES)
        self.counts: dict[str, int] = {}
        self.module_imports: dict[str, str] = {}
        self.module_names: set[str] = set()  # module-level defs and classes

    # --- structure ---------------------------------------------------------------------

    def module(self, tree: ast.Module) -> None:
        for statement in tree.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.module_names.add(statement.name)
        scope = _Scope(None, self.module_imports)
        self.block(tree.body, scope, [], None)
        self.summary.imports = dict(self.module_imports)

    def _key(self, qualname: str) -> str:
        index = self.counts.get(qualname, 0)
        self.counts[qualname] = index + 1
        return f"{qualname}#{index}"

    def block(
        self,
        statements: list[ast.stmt],
        scope: _Scope,
        names: list[str],
        klass: ClassSummary | None,
    ) -> None:
        """Walk statements in source order; `names` is the qualname prefix; `klass` the class
        whose body this is (directly)."""
        saved = scope.guards
        for statement in statements:
            self.statement(statement, scope, names, klass)
            exit_test = _early_exit_test(statement)
            if exit_test is not None:
                # Code after `if T: return` runs under `not T`: the same kinds of guard.
                scope.guards = (*scope.guards, exit_test)
        scope.guards = saved

    def statement(
        self, node: ast.stmt, scope: _Scope, names: list[str], klass: ClassSummary | None
    ) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.function(node, scope, names, klass)
            return
        if isinstance(node, ast.ClassDef):
            self.klass(node, scope, names)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    scope.imports[alias.asname] = alias.name
                else:
                    root = alias.name.split(".", 1)[0]
                    scope.imports[root] = root
            return
        if isinstance(node, ast.ImportFrom):
            base = resolve_relative(
                self.summary.module, self.summary.is_package, node.level or 0, node.module or ""
            )
            if base is None:
                return
            for alias in node.names:
                if alias.name == "*":
                    continue
                scope.imports[alias.asname or alias.name] = f"{base}.{alias.name}"
            return
        if isinstance(node, ast.If):
            self.expression(node.test, scope)
            lazy = self.lazy_block(node, scope)
            saved = scope.guards
            scope.guards = (*saved, node.test, *((RARE,) if lazy else ()))
            # Each branch's bindings are journaled, so both start from the same state and
            # a name holds, after the `if`, what either branch left in it.
            scope.journals.append({})
            self.block(node.body, scope, names, klass)
            body_journal = scope.journals.pop()
            body_values = {name: scope.env.get(name) for name in body_journal}
            for name, old in body_journal.items():
                _restore(scope.env, name, old)
            negated = isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
            scope.guards = (
                (*saved, node.test.operand) if negated else saved  # type: ignore[attr-defined]
            )
            scope.journals.append({})
            self.block(node.orelse, scope, names, klass)
            else_journal = scope.journals.pop()
            scope.guards = saved
            for journal in (body_journal, else_journal):
                for name, old in journal.items():
                    _note(scope, name, old)  # the value before the `if`, for an outer branch
            for name in {*body_journal, *else_journal}:
                before = body_journal[name] if name in body_journal else else_journal[name]
                in_body = body_values.get(name) if name in body_journal else before
                in_else = scope.env.get(name) if name in else_journal else before
                options = [v for v in (in_body, in_else) if v is not None and v is not _MISSING]
                if not options:
                    scope.env.pop(name, None)
                elif len(options) == 1 or options[0] == options[1]:
                    scope.env[name] = options[0]
                else:
                    scope.env[name] = _union(options[0], options[1])
            return
        if isinstance(node, ast.While):
            self.expression(node.test, scope)
            saved = scope.guards
            scope.guards = (*saved, node.test)
            self.block(node.body, scope, names, klass)
            scope.guards = saved
            self.block(node.orelse, scope, names, klass)
            return
        if isinstance(node, (ast.For, ast.AsyncFor)):
            self.expression(node.iter, scope)
            self.bind_loop(node.target, node.iter, scope)
            self.block(node.body, scope, names, klass)
            self.block(node.orelse, scope, names, klass)
            return
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                self.expression(item.context_expr, scope)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, ["unknown"], scope)
            self.block(node.body, scope, names, klass)
            return
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            self.block(node.body, scope, names, klass)  # type: ignore[attr-defined]
            for handler in node.handlers:  # type: ignore[attr-defined]
                if handler.name:
                    _set(scope, handler.name, ["host"])
                self.block(handler.body, scope, names, klass)
            self.block(node.orelse, scope, names, klass)  # type: ignore[attr-defined]
            self.block(node.finalbody, scope, names, klass)  # type: ignore[attr-defined]
            return
        if type(node).__name__ == "Match":
            self.expression(node.subject, scope)  # type: ignore[attr-defined]
            for case in node.cases:  # type: ignore[attr-defined]
                self.block(case.body, scope, names, klass)
            return
        # Simple statements.
        if isinstance(node, ast.Assign):
            self.expression(node.value, scope)
            value = self.atoms(node.value, scope)
            for target in node.targets:
                self.assign(target, node.value, value, scope, klass)
            return
        if isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.expression(node.value, scope)
                self.assign(node.target, node.value, self.atoms(node.value, scope), scope, klass)
            elif klass is not None and isinstance(node.target, ast.Name) and scope.info is None:
                kind = _annotation_kind(ast.unparse(node.annotation))
                if kind is not None:
                    klass.attributes.setdefault(node.target.id, [kind])
            return
        if isinstance(node, ast.AugAssign):
            self.expression(node.value, scope)
            if isinstance(node.target, ast.Name):
                previous = scope.env.get(node.target.id, ["unknown"])
                _set(scope, node.target.id, _union(previous, self.atoms(node.value, scope)))
            return
        if isinstance(node, ast.Return):
            if node.value is not None:
                self.expression(node.value, scope)
                if scope.info is not None and not _is_none(node.value):
                    info = scope.info
                    literal = node.value
                    constant = (
                        literal.value
                        if isinstance(literal, ast.Constant)
                        and type(literal.value) is int
                        and (not info.returns or info.const_return is not None)
                        else None
                    )
                    if constant is not None and info.const_return not in (None, constant):
                        constant = None
                    info.const_return = constant
                    info.returns.append(self.value(node.value, scope))
            return
        if scope.info is None:
            return
        for name in _child_fields(type(node)):
            child = getattr(node, name)
            if isinstance(child, ast.expr):
                self.expression(child, scope)
            elif type(child) is list:
                for item in child:
                    if isinstance(item, ast.expr):
                        self.expression(item, scope)

    def function(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        outer: _Scope,
        names: list[str],
        klass: ClassSummary | None,
    ) -> None:
        qualname = ".".join([*names, node.name])
        decorators = [
            dotted(d.func if isinstance(d, ast.Call) else d) or "?" for d in node.decorator_list
        ]
        for decorator in node.decorator_list:
            self.expression(decorator, outer)
        args = node.args
        params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        is_static = "staticmethod" in decorators
        info = FunctionSummary(
            key=self._key(qualname),
            name=node.name,
            qualname=qualname,
            line=node.lineno,
            cls=klass.qualname if klass is not None else None,
            parent=outer.info.key if outer.info is not None and klass is None else None,
            params=params,
            bound=klass is not None and not is_static,
            decorators=decorators,
            returns_annotation=ast.unparse(node.returns) if node.returns is not None else None,
            span=(
                min([node.lineno, *(d.lineno for d in node.decorator_list)]),
                node.end_lineno or node.lineno,
            ),
        )
        self.summary.functions.append(info)
        info.rank_aware = self._spans_rank_line(node)
        info.dist_rank = self._spans(self.dist_rank_lines, node)
        info.rank_source = self._spans(self.rank_source_lines, node)
        if klass is not None:
            klass.methods.setdefault(node.name, info.key)
        scope = _Scope(
            info,
            dict(outer.imports),
            cls=klass if klass is not None else outer.cls,
            record_calls=outer.record_calls and not is_cold_name(node.name),
        )
        if outer.info is not None:
            # A closure sees the enclosing function's locals.
            scope.env = dict(outer.env)
            scope.instances = dict(outer.instances)
        annotated = [a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        for index, name in enumerate(params):
            # `core_model: nn.Module`, `n: int`: the annotation says what the parameter is
            # (a module moved with `.cpu()` is an offload, not a read of a tensor).
            kind = _annotation_kind(ast.unparse(annotated[index])) if annotated[index] else None
            scope.env[name] = [kind] if kind is not None else [["p", index]]
            scope.instances.pop(name, None)
        for star in (args.vararg, args.kwarg):
            if star is not None:
                scope.env[star.arg] = ["host"]
        self.block(node.body, scope, [*names, node.name], None)

    def klass(self, node: ast.ClassDef, outer: _Scope, names: list[str]) -> None:
        qualname = ".".join([*names, node.name])
        bases = []
        for base in node.bases:
            self.expression(base, outer)
            if isinstance(base, ast.Subscript):  # Generic[T], Base[Config]
                base = base.value
            text = dotted(base)
            if text is not None:
                bases.append(self.qualify(text, outer.imports))
        for keyword in node.keywords:
            self.expression(keyword.value, outer)
        info = ClassSummary(node.name, qualname, node.lineno, bases)
        info.rank_aware = self._spans_rank_line(node)
        info.dist_rank = self._spans(self.dist_rank_lines, node)
        info.rank_source = self._spans(self.rank_source_lines, node)
        self.summary.classes.append(info)
        self.class_methods[qualname] = {
            item.name: item
            for item in node.body
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        body_scope = _Scope(None, dict(outer.imports), cls=info)
        self.block(node.body, body_scope, [*names, node.name], info)

    # --- names -------------------------------------------------------------------------

    def qualify(self, text: str, imports: dict[str, str]) -> str:
        """The qualified name of a dotted name through the visible imports, or `.name` for
        a name of this module."""
        root, _, rest = text.partition(".")
        target = imports.get(root)
        if target is None:
            return "." + text
        return f"{target}.{rest}" if rest else target

    def _spans_rank_line(self, node: ast.stmt) -> bool:
        return self._spans(self.rank_lines, node)

    @staticmethod
    def _spans(lines: list[int], node: ast.stmt) -> bool:
        if not lines:
            return False
        first = bisect.bisect_left(lines, node.lineno)
        return first < len(lines) and lines[first] <= (node.end_lineno or node.lineno)

    def _lines_matching(self, pattern: re.Pattern[str]) -> list[int]:
        starts = self._starts()
        return sorted({bisect.bisect_right(starts, m.start()) for m in pattern.finditer(self.text)})

    def _lines_with(self, tokens: tuple[str, ...]) -> list[int]:
        """The sorted line numbers where any of `tokens` occurs (substring search)."""
        starts = self._starts()
        lines: set[int] = set()
        for token in tokens:
            position = self.text.find(token)
            while position != -1:
                lines.add(bisect.bisect_right(starts, position))
                position = self.text.find(token, position + len(token))
        return sorted(lines)

    def _starts(self) -> list[int]:
        if self._line_starts is None:
            self._line_starts = [0]
            for line in self.text.splitlines(keepends=True):
                self._line_starts.append(self._line_starts[-1] + len(line))
        return self._line_starts

    def segment(self, node: ast.expr) -> str:
        """The source text of an expression (ast offsets are UTF-8 byte columns)."""
        starts = self._starts()
        if node.end_lineno is None or node.end_col_offset is None or node.lineno >= len(starts):
            return ast.unparse(node)
        begin = self.text[starts[node.lineno - 1] : starts[node.lineno]]
        if node.lineno == node.end_lineno:
            data = begin.encode("utf-8", "surrogatepass")
            return data[node.col_offset : node.end_col_offset].decode("utf-8", "replace")
        end = self.text[starts[node.end_lineno - 1] : starts[min(node.end_lineno, len(starts) - 1)]]
        middle = self.text[starts[node.lineno] : starts[node.end_lineno - 1]]
        head = begin.encode("utf-8", "surrogatepass")[node.col_offset :].decode("utf-8", "replace")
        tail = end.encode("utf-8", "surrogatepass")[: node.end_col_offset].decode(
            "utf-8", "replace"
        )
        return head + middle + tail

    def condition(self, test: ast.expr) -> frozenset[str]:
        key = id(test)
        kinds = self._conditions.get(key)
        if kinds is None:
            kinds = self._conditions[key] = condition_kinds(self.segment(test))
        return kinds

    def resolve_guards(self, pending: tuple[Any, ...]) -> tuple[str, ...]:
        kinds: set[str] = set()
        for item in pending:
            kinds |= {item} if isinstance(item, str) else self.condition(item)
        return tuple(sorted(kinds))

    def lazy_block(self, node: ast.If, scope: _Scope) -> bool:
        """`if not self.built: ...; self.built = True` (or `if self.cache is None:` that sets
        the cache): the body runs once. The attribute may be set by a method of the class the
        body calls (`if not self.initialized: self._init_from_batch(x)`, which sets it)."""
        if not _may_be_lazy_test(node.test):
            return False
        attribute = lazy_attribute(self.segment(node.test))
        if attribute is None:
            return False
        if _sets_self_attribute(node.body, attribute):
            return True
        methods = self.class_methods.get(scope.cls.qualname, {}) if scope.cls else {}
        for call in ast.walk(ast.Module(body=node.body, type_ignores=[])):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id == "self"
                and call.func.attr in methods
                and _sets_self_attribute(methods[call.func.attr].body, attribute)
            ):
                return True
        return False

    # --- expressions: calls --------------------------------------------------------------

    def expression(self, node: ast.expr, scope: _Scope) -> None:
        """Record the calls in an expression (lambdas included, comprehensions included), with
        the guards of `a and b` / `x if c else y` inside it."""
        if scope.info is None or not scope.record_calls:
            return
        stack: list[tuple[ast.AST, tuple[Any, ...]]] = [(node, scope.guards)]
        while stack:
            current, guards = stack.pop()
            if isinstance(current, ast.Call):
                call = self.call_site(current, scope, guards)
                if call is not None:
                    if call.form != "name" or call.target.split(".", 1)[0] not in _EXTERNAL:
                        # What the call passes: the callee's parameters' values, for the
                        # model (a helper only ever called with CPU tensors or numpy).
                        call.args = [
                            self.atoms(a, scope)
                            for a in current.args
                            if not isinstance(a, ast.Starred)
                        ]
                        call.keywords = {
                            k.arg: self.atoms(k.value, scope)
                            for k in current.keywords
                            if k.arg is not None
                        }
                    scope.info.calls.append(call)
            if isinstance(current, ast.BoolOp) and isinstance(current.op, ast.And):
                extra = guards
                for value in current.values:
                    stack.append((value, extra))
                    extra = (*extra, value)
                continue
            if isinstance(current, ast.IfExp):
                stack.append((current.test, guards))
                stack.append((current.body, (*guards, current.test)))
                stack.append((current.orelse, guards))
                continue
            for name in _child_fields(type(current)):
                child = getattr(current, name)
                if type(child) is list:
                    for item in child:
                        if isinstance(item, ast.AST):
                            stack.append((item, guards))
                elif isinstance(child, ast.AST):
                    stack.append((child, guards))

    def call_site(self, node: ast.Call, scope: _Scope, pending: tuple[Any, ...]) -> CallSite | None:
        func = node.func
        line = node.lineno
        guards = self.resolve_guards(pending) if pending else ()
        if isinstance(func, ast.Attribute):
            value = func.value
            if isinstance(value, ast.Name) and value.id == "self":
                return CallSite("self", func.attr, line, guards)
            if _is_super_call(value):
                return CallSite("super", func.attr, line, guards)
            if (
                isinstance(value, ast.Attribute)
                and isinstance(value.value, ast.Name)
                and value.value.id == "self"
            ):
                return CallSite("attr", f"{value.attr}.{func.attr}", line, guards)
            if isinstance(value, ast.Name) and value.id in scope.instances:
                return CallSite("inst", f"{scope.instances[value.id]}.{func.attr}", line, guards)
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
        ):
            return None
        if isinstance(func, ast.Name) and func.id in scope.instances:
            return CallSite("inst", f"{scope.instances[func.id]}.__call__", line, guards)
        text = dotted(func)
        if text is None:
            return None
        root = text.split(".", 1)[0]
        if root in scope.env and root not in scope.imports:
            return None  # a call through a local variable or parameter
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Attribute)
            and dotted(func.value.value) == "self"
        ):
            return None
        return CallSite("name", self.qualify(text, scope.imports), line, guards)

    # --- expressions: values -------------------------------------------------------------

    def assign(
        self,
        target: ast.expr,
        value_node: ast.expr,
        value: list[Atom],
        scope: _Scope,
        klass: ClassSummary | None,
    ) -> None:
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            and scope.cls is not None
            and scope.info is not None
        ):
            if (
                scope.info.name == "__init__"
                and scope.info.cls == scope.cls.qualname
                and isinstance(value_node, ast.Name)
                and value_node.id in scope.info.params
            ):
                scope.cls.param_attributes[target.attr] = scope.info.params.index(value_node.id)
            existing = scope.cls.attributes.get(target.attr)
            atoms = self._attribute_atoms(value_node, value)
            scope.cls.attributes[target.attr] = (
                atoms if existing is None else _union(existing, atoms)
            )
            return
        if klass is not None and scope.info is None and isinstance(target, ast.Name):
            # A class-level assignment: a default for `self.<name>`.
            klass.attributes.setdefault(target.id, self._attribute_atoms(value_node, value))
            return
        if scope.info is None:
            return
        if (
            isinstance(target, (ast.Tuple, ast.List))
            and isinstance(value_node, (ast.Tuple, ast.List))
            and len(target.elts) == len(value_node.elts)
        ):
            for t, v in zip(target.elts, value_node.elts, strict=True):
                self.assign(t, v, self.atoms(v, scope), scope, klass)
            return
        self.bind(target, value, scope)
        if isinstance(target, ast.Name):
            ctor = self.constructor(value_node, scope)
            if ctor is not None:
                scope.instances[target.id] = ctor
            else:
                scope.instances.pop(target.id, None)

    def _attribute_atoms(self, value_node: ast.expr, value: list[Atom]) -> list[Atom]:
        # Parameters of the method that sets the attribute mean nothing to other methods.
        return [a for a in value if not (isinstance(a, list) and a[0] == "p")] or ["unknown"]

    def constructor(self, node: ast.expr, scope: _Scope) -> str | None:
        """The qualified class of `Cls(...)` (a capitalised callee), else None."""
        if not isinstance(node, ast.Call):
            return None
        text = dotted(node.func)
        if text is None or not text.rsplit(".", 1)[-1][:1].isupper():
            return None
        root = text.split(".", 1)[0]
        if root in scope.env and root not in scope.imports:
            return None
        return self.qualify(text, scope.imports)

    def bind(self, target: ast.expr, value: list[Atom], scope: _Scope) -> None:
        if isinstance(target, ast.Name):
            if value == ["none"]:
                # `x = None` in a branch: x keeps what it may otherwise hold.
                if target.id not in scope.env:
                    _set(scope, target.id, ["unknown"])
                return
            _set(scope, target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            elements = _tuple_elements(value, len(target.elts))
            for index, element in enumerate(target.elts):
                if isinstance(element, ast.Starred):
                    self.bind(element.value, ["host"], scope)
                else:
                    self.bind(element, elements[index] if elements else ["unknown"], scope)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, ["host"], scope)

    def bind_loop(self, target: ast.expr, iterator: ast.expr, scope: _Scope) -> None:
        self.bind(target, self.element_atoms(iterator, target, scope), scope)

    def element_atoms(self, iterator: ast.expr, target: ast.expr, scope: _Scope) -> list[Atom]:
        """What iterating over `iterator` yields."""
        if isinstance(iterator, ast.Call):
            name = dotted(iterator.func)
            if name == "range":
                return ["number"]
            if name == "zip" and isinstance(target, (ast.Tuple, ast.List)):
                return [
                    ["t", *(self.element_atoms(a, ast.Name("_"), scope) for a in iterator.args)]
                ]
            if name == "enumerate" and iterator.args:
                inner = self.element_atoms(iterator.args[0], ast.Name("_"), scope)
                return [["t", ["number"], inner]]
            if isinstance(iterator.func, ast.Attribute) and iterator.func.attr in ("items",):
                return [["t", ["host"], ["unknown"]]]
        if isinstance(iterator, (ast.List, ast.Tuple)):
            atoms: list[Atom] = []
            for element in iterator.elts:
                atoms = _union(atoms, self.atoms(element, scope))
            return atoms or ["unknown"]
        base = self.atoms(iterator, scope)
        rows = [a for a in base if _is_tensorish(a) or (isinstance(a, list) and a[0] == "mv")]
        if rows:
            # Rows of a tensor are tensors, where it is (rows of `tokens.cpu()` are on the CPU).
            return rows
        if base == ["number"] or base == ["host"]:
            return ["host"]
        if base == ["numpy"]:
            return ["numpy"]
        return ["unknown"]

    def value(self, node: ast.expr, scope: _Scope) -> list[Atom]:
        """The atoms of a returned value (a tuple is one `["t", ...]` atom)."""
        if isinstance(node, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in node.elts):
            return [["t", *(self.atoms(e, scope) for e in node.elts)]]
        return self.atoms(node, scope)

    def atoms(self, node: ast.expr, scope: _Scope, depth: int = 0) -> list[Atom]:
        if depth > 30:
            return ["unknown"]
        d = depth + 1
        if isinstance(node, ast.Constant):
            if node.value is None:
                return ["none"]
            if isinstance(node.value, (bool, int, float, complex)):
                return ["number"]
            return ["host"]
        if isinstance(node, (ast.JoinedStr, ast.Lambda)):
            return ["host"]
        if isinstance(node, (ast.Dict, ast.Set, ast.DictComp, ast.SetComp)):
            return ["unknown"]  # a container: of tensors as often as not (`{"loss": loss}`)
        if isinstance(node, (ast.List, ast.ListComp, ast.GeneratorExp, ast.Tuple)):
            return ["unknown"]
        if isinstance(node, ast.Name):
            if node.id in ("True", "False"):
                return ["number"]
            bound = scope.env.get(node.id)
            if bound is not None:
                return bound
            imported = scope.imports.get(node.id)
            if imported is not None:
                return [_root_kind(imported.split(".", 1)[0]) or "unknown"]
            return ["unknown"]
        if isinstance(node, ast.Attribute):
            return self.attribute(node, scope, d)
        if isinstance(node, ast.Call):
            return self.call(node, scope, d)
        if isinstance(node, ast.Subscript):
            base = self.atoms(node.value, scope, d) or ["unknown"]
            if all(isinstance(a, str) for a in base):
                return base  # indexing a tensor gives a tensor, a number stays a number
            index = node.slice
            position = (
                index.value if isinstance(index, ast.Constant) and type(index.value) is int else -1
            )
            return [["e", position, base]]  # element `position` (-1: any) of a tuple
        if isinstance(node, ast.BinOp):
            left, right = self.atoms(node.left, scope, d), self.atoms(node.right, scope, d)
            if isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)) and (
                _maskish(left) or _maskish(right)
            ):
                return ["mask"] if "mask" in left or "mask" in right else _as_mask(left, right)
            if isinstance(node.op, ast.Mult) and _maskish(left) and _maskish(right):
                # (t != 255) * (t < C): a product of masks is a mask
                return ["mask"] if "mask" in left and "mask" in right else _as_mask(left, right)
            return _arith(left, right)
        if isinstance(node, ast.UnaryOp):
            inner = self.atoms(node.operand, scope, d)
            if isinstance(node.op, ast.Not):
                return ["number"] if _all_host(inner) else ["unknown"]
            if isinstance(node.op, ast.Invert):
                if any(_is_tensorish(a) for a in inner):
                    return ["mask"]
                if any(isinstance(a, list) and a[0] in ("p", "m", "a", "c") for a in inner):
                    return [["m", *(a for a in inner if isinstance(a, list))]]
            return inner
        if isinstance(node, ast.Compare):
            if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
                return ["number"]
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Constant) and isinstance(o.value, str) for o in operands):
                return ["number"]
            kinds = [self.atoms(o, scope, d) for o in operands]
            if all(_all_host(k) for k in kinds):
                return ["number"]
            if any(any(_is_tensorish(a) for a in k) for k in kinds):
                return ["mask"]
            # A comparison of parameters or unknown values: a mask when they are tensors.
            return [["m", *(a for k in kinds for a in k if isinstance(a, list))]]
        if isinstance(node, ast.BoolOp):
            out: list[Atom] = []
            for value in node.values:
                out = _union(out, self.atoms(value, scope, d))
            return [a for a in out if a != "none"] or ["none"]
        if isinstance(node, ast.IfExp):
            body, orelse = self.atoms(node.body, scope, d), self.atoms(node.orelse, scope, d)
            out = _union([a for a in body if a != "none"], [a for a in orelse if a != "none"])
            return out or ["none"]
        if isinstance(node, ast.NamedExpr):
            value = self.atoms(node.value, scope, d)
            self.bind(node.target, value, scope)
            return value
        if isinstance(node, ast.Starred):
            return self.atoms(node.value, scope, d)
        return ["unknown"]

    def attribute(self, node: ast.Attribute, scope: _Scope, d: int) -> list[Atom]:
        attr = node.attr
        base_node = node.value
        if isinstance(base_node, ast.Name) and base_node.id == "self":
            if attr in SELF_HOST_ATTRIBUTES:
                return ["host"]
            return [["a", attr]]
        text = dotted(node)
        if text is not None:
            root = text.split(".", 1)[0]
            if root in scope.imports and root not in scope.env:
                qualified = scope.imports[root]
                kind = _root_kind(qualified.split(".", 1)[0])
                if kind is not None:
                    return [kind]
                if qualified.split(".", 1)[0] == "torch":
                    return ["host"]  # torch.float32, torch.nn: not tensors
                return ["unknown"]
        if attr in TENSOR_ATTRIBUTES_HOST:
            return ["host"]
        base = self.atoms(base_node, scope, d)
        if attr in ("T", "mT", "H", "data", "grad", "real", "imag"):
            return base
        if _all_host(base):
            return ["host"]
        return ["unknown"]

    def call(self, node: ast.Call, scope: _Scope, d: int) -> list[Atom]:
        func = node.func
        positional = [a for a in node.args if not isinstance(a, ast.Starred)]

        def args() -> list[list[Atom]]:
            return [self.atoms(a, scope, d) for a in positional]

        if isinstance(func, ast.Name):
            name = func.id
            if name == "self" and scope.cls is not None:
                return ["device"]  # `self(x)`: the module's forward
            if name in scope.instances:
                return [["c", "inst", f"{scope.instances[name]}.__call__", args()]]
            if name in scope.env:
                return ["unknown"]  # a local callable
            if name in scope.imports:
                return self.qualified_call(scope.imports[name], node, scope, d, args)
            if name == "self":
                return ["device"]
            if name in NUMBER_BUILTINS:
                return ["number"]
            if name in HOST_BUILTINS:
                return ["host"]
            if name in ("min", "max", "sum") and positional:
                out: list[Atom] = []
                for arg in positional:
                    out = _union(out, self.atoms(arg, scope, d))
                return out
            if name in self.module_names:
                return [["c", "name", "." + name, args()]]
            return ["unknown"]
        if not isinstance(func, ast.Attribute):
            return ["unknown"]
        receiver, method = func.value, func.attr
        if isinstance(receiver, ast.Name) and receiver.id == "self":
            if method in ("log", "log_dict", "print", "save_hyperparameters"):
                return ["host"]
            if method == "forward":
                return ["device"]
            return [["c", "self", method, args()]]
        if _is_super_call(receiver):
            return [["c", "super", method, args()]]
        if (
            isinstance(receiver, ast.Attribute)
            and isinstance(receiver.value, ast.Name)
            and receiver.value.id == "self"
        ):
            return [["c", "attr", f"{receiver.attr}.{method}", args()]]
        if isinstance(receiver, ast.Name) and receiver.id in scope.instances:
            return [["c", "inst", f"{scope.instances[receiver.id]}.{method}", args()]]
        text = dotted(func)
        if text is not None:
            root = text.split(".", 1)[0]
            if root not in scope.env:
                if root in scope.imports:
                    return self.qualified_call(
                        self.qualify(text, scope.imports), node, scope, d, args
                    )
                if root in self.module_names:
                    return [["c", "name", "." + text, args()]]  # `Cls.build(...)`
        # A method of a value.
        base = self.atoms(receiver, scope, d)
        if method in NUMBER_METHODS:
            return ["number"]
        if method in HOST_METHODS:
            return ["host"]
        if base == ["module"]:
            if method in MODULE_SELF_METHODS:
                return ["module"]  # `self.expert.cpu()`: the module itself, offloaded
            if method in TENSOR_METHODS_OF_MODULES and any(
                _is_tensorish(a) or _is_param(a) for arg in args() for a in arg
            ):
                return ["device"]  # `model.generate(ids)`
            return ["unknown"]
        if _all_host(base):
            return ["numpy"] if "numpy" in base else ["host"]
        if method in ("cpu", "cuda", "xla", "to"):
            moved = (
                self.to_call(node, base, scope, d)
                if method == "to"
                else (["cpu"] if method == "cpu" else ["device"])
            )
            symbolic = [a for a in base if isinstance(a, list)]
            if symbolic and moved in (["cpu"], ["device"]):
                # `make_model().to(device)`: a module stays a module wherever it moves.
                return [["mv", moved[0], symbolic]]
            return moved
        if method == "numpy":
            return ["numpy"]
        if method in MASK_METHODS:
            return ["mask"]
        if method in ("any", "all") and (positional or node.keywords):
            return ["mask"]
        if method in ("generate", "sample") and any(
            _is_tensorish(a) for arg in args() for a in arg
        ):
            return ["device"]
        return base

    def qualified_call(
        self, qualified: str, node: ast.Call, scope: _Scope, d: int, args: Any
    ) -> list[Atom]:
        top = qualified.split(".", 1)[0]
        if top == "torch":
            return self.torch_call(qualified[len("torch.") :], node, scope, d)
        kind = _root_kind(top)
        if kind is not None:
            return [kind]
        if top == "torchmetrics" and qualified.rsplit(".", 1)[-1][:1].isupper():
            return ["module"]
        return [["c", "name", qualified, args()]]

    def to_call(self, node: ast.Call, base: list[Atom], scope: _Scope, d: int) -> list[Atom]:
        for arg in [*node.args, *(k.value for k in node.keywords if k.arg in ("device", "other"))]:
            literal = _device_literal(arg, scope)
            if literal == "cpu":
                return ["cpu"]
            if literal == "device":
                return ["device"]
            if isinstance(arg, ast.Attribute) and arg.attr == "device":
                return ["device"]
            if isinstance(arg, ast.Name) and "device" in arg.id.lower():
                return ["device"]
        return base

    def torch_call(self, rest: str, node: ast.Call, scope: _Scope, d: int) -> list[Atom]:
        last = rest.rsplit(".", 1)[-1]
        if rest.startswith(("cuda.", "backends.", "distributed.")) or last in (
            "device",
            "dtype",
            "Size",
            "is_tensor",
            "numel",
            "finfo",
            "iinfo",
            "no_grad",
            "manual_seed",
            "is_grad_enabled",
        ):
            return ["host"]
        if rest.startswith("nn.") and last[:1].isupper():
            if last in ("Parameter", "Buffer"):
                return ["device"]
            return ["module"]
        device_arg = next((k.value for k in node.keywords if k.arg == "device"), None)
        if last in TORCH_FACTORIES:
            if device_arg is None:
                return ["cpu"]
            return ["cpu"] if _device_literal(device_arg, scope) == "cpu" else ["device"]
        if last in LIKE_FACTORIES:
            if device_arg is not None:
                return ["cpu"] if _device_literal(device_arg, scope) == "cpu" else ["device"]
            return self.atoms(node.args[0], scope, d) if node.args else ["unknown"]
        if last in TORCH_MASK_FUNCTIONS:
            return ["mask"]
        out: list[Atom] = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                continue
            atoms = self.atoms(arg, scope, d)
            out = _union(out, [a for a in atoms if a not in ("number", "host", "none")])
        if last in ("any", "all") and (
            "dim" in [k.arg for k in node.keywords] or len(node.args) > 1
        ):
            return ["mask"]
        out = [a for a in out if a != "mask"] or out
        return out or ["unknown"]


# Fields of ast nodes that hold child nodes (not names, operators or load/store contexts).
_NOT_CHILDREN = frozenset({"ctx", "op", "ops", "type_comment", "kind", "is_async", "level"})
_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    fields = _FIELDS.get(cls)
    if fields is None:
        sample_types = {
            "Name": (),
            "Constant": (),
            "Attribute": ("value",),
            "alias": (),
        }
        if cls.__name__ in sample_types:
            fields = sample_types[cls.__name__]
        else:
            fields = tuple(
                f
                for f in cls._fields  # type: ignore[attr-defined]
                if f not in _NOT_CHILDREN
                and f not in ("id", "attr", "arg", "name", "module", "names", "value_str")
            )
        _FIELDS[cls] = fields
    return fields


# --- atoms ---------------------------------------------------------------------------------


def _root_kind(root: str) -> str | None:
    if root in NUMPY_ROOTS:
        return "numpy"
    if root in NUMBER_ROOTS:
        return "number"
    if root in HOST_ROOTS:
        return "host"
    return None


def _device_literal(node: ast.expr, scope: _Scope) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return "cpu" if node.value.split(":", 1)[0] == "cpu" else "device"
    if isinstance(node, ast.Call) and node.args:
        text = dotted(node.func)
        if text is not None and text.rsplit(".", 1)[-1] == "device":
            return _device_literal(node.args[0], scope)
    return None


def _is_tensorish(atom: Atom) -> bool:
    return atom in ("device", "cpu", "mask")


def _maskish(atoms: list[Atom]) -> bool:
    return "mask" in atoms or any(isinstance(a, list) and a[0] == "m" for a in atoms)


def _as_mask(left: list[Atom], right: list[Atom]) -> list[Atom]:
    """A mask whose tensor-ness depends on the symbolic parts of its operands."""
    parts: list[Atom] = []
    for atom in (*left, *right):
        if isinstance(atom, list):
            parts.extend(atom[1:] if atom[0] == "m" else [atom])
    return [["m", *parts]]


def _is_param(atom: Atom) -> bool:
    return isinstance(atom, list) and atom[0] == "p"


def _all_host(atoms: list[Atom]) -> bool:
    return bool(atoms) and all(a in ("number", "host", "numpy", "module", "none") for a in atoms)


def _union(a: list[Atom], b: list[Atom]) -> list[Atom]:
    out = list(a)
    for atom in b:
        if atom not in out:
            out.append(atom)
    if len(out) > _MAX_ATOMS:
        return ["unknown"]
    return out


def _arith(left: list[Atom], right: list[Atom]) -> list[Atom]:
    """`a + b`: a tensor if either side is one; numbers stay numbers."""
    both = _union(left, right)
    tensors = [a for a in both if a not in ("number", "host", "none", "module")]
    if tensors:
        return [a if a != "mask" else "device" for a in tensors]
    if "numpy" in both:
        return ["numpy"]
    return ["number"] if both else ["unknown"]


def _tuple_elements(value: list[Atom], count: int) -> list[list[Atom]] | None:
    """The per-element atoms of a tuple value of `count` elements (None if unknown)."""
    tuples = [a for a in value if isinstance(a, list) and a[0] == "t" and len(a) - 1 == count]
    if len(tuples) == 1 and len(value) == 1:
        return [list(e) for e in tuples[0][1:]]
    if any(isinstance(a, list) and a[0] in ("c", "p", "a") for a in value):
        # Unpacking a call's or a parameter's value: element i of it, resolved later.
        return [[["e", i, value]] for i in range(count)]
    if all(_is_tensorish(a) for a in value):
        return [list(value) for _ in range(count)]  # unpacking a tensor gives tensors
    return None


def _annotation_kind(text: str) -> str | None:
    text = text.replace(" ", "")
    if text.endswith(("Module", "Sequential", "ModuleList", "ModuleDict", "Metric")):
        return "module"
    if text in ("int", "float", "bool"):
        return "number"
    return None


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


_MISSING = object()


def _set(scope: _Scope, name: str, value: list[Atom]) -> None:
    """Bind a local, journaling its previous value for the enclosing `if` branch."""
    if scope.journals:
        journal = scope.journals[-1]
        if name not in journal:
            journal[name] = scope.env.get(name, _MISSING)
    scope.env[name] = value


def _note(scope: _Scope, name: str, old: Any) -> None:
    """Carry a journal entry of an inner branch up to the enclosing branch's journal."""
    if scope.journals and name not in scope.journals[-1]:
        scope.journals[-1][name] = old


def _restore(env: dict[str, list[Atom]], name: str, old: Any) -> None:
    if old is _MISSING:
        env.pop(name, None)
    else:
        env[name] = old


# In-place methods that set a tensor flag (a registered buffer) to a new value.
_IN_PLACE_SETTERS = frozenset({"fill_", "copy_"})


def _self_attribute_named(node: ast.expr, attribute: str) -> bool:
    """`self.<attribute>`, or its `.data`."""
    if isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attribute
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _sets_self_attribute(body: list[ast.stmt], attribute: str) -> bool:
    """Whether `body` sets `self.<attribute>`: assigns it, `setattr(self, "<attribute>", ...)`,
    or fills a buffer flag in place (`self.initialized.fill_(True)`, `.data.copy_(...)`)."""
    for statement in ast.walk(ast.Module(body=body, type_ignores=[])):
        if (
            isinstance(statement, ast.Call)
            and isinstance(statement.func, ast.Attribute)
            and statement.func.attr in _IN_PLACE_SETTERS
            and _self_attribute_named(statement.func.value, attribute)
        ):
            return True
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and target.attr == attribute
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    return True
        if (
            isinstance(statement, ast.Call)
            and isinstance(statement.func, ast.Name)
            and statement.func.id == "setattr"
            and len(statement.args) >= 2
            and isinstance(statement.args[1], ast.Constant)
            and statement.args[1].value == attribute
        ):
            return True
    return False


def _may_be_lazy_test(test: ast.expr) -> bool:
    """A cheap look at the shapes `guards.lazy_attribute` reads (`not self.x`,
    `self.x is None`, `not hasattr(self, ...)`, `self.x == False`)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        operand = test.operand
        return isinstance(operand, (ast.Attribute, ast.Call))
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Attribute)


def _early_exit_test(statement: ast.stmt) -> ast.expr | None:
    """`if TEST: return` (or continue/raise/break) with no else: the code after it runs under
    `not TEST`; the guard kind is the same either way."""
    if not isinstance(statement, ast.If) or statement.orelse or len(statement.body) != 1:
        return None
    if isinstance(statement.body[0], (ast.Return, ast.Continue, ast.Raise)):
        return statement.test
    return None
