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

What a value is (the atoms of returns, attributes and call arguments) is the one value
inference of tpulint.analysis.inference, with the tables of tpulint.analysis.value_tables; the
rules ask the same inference about their expressions (tpulint.analysis.value_query).
"""

from __future__ import annotations

import ast
import bisect
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from tpulint.analysis.guards import (
    ANOMALY_CHECKS,
    ANOMALY_REDUCTIONS,
    RARE,
    always_sets_flag,
    change_targets,
    condition_kinds,
    counter_aliases,
    done_attribute,
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
)
from tpulint.analysis.hooks import is_cold_name
from tpulint.analysis.index_uses import MENTIONS as INDEX_USE_WORDS
from tpulint.analysis.index_uses import index_uses, value_texts
from tpulint.analysis.inference import (
    MISSING,
    STEP_BATCH,
    Atom,
    Scope,
    ValueEvaluator,
    all_host,
    device_literal,
    dict_display,
    dict_entries,
    dotted,
    entry_key,
    grow_container,
    is_string,
    is_super_call,
    record_fields,
    self_entry,
    set_local,
    tensor_on_cuda,
    union,
    with_entries,
)
from tpulint.analysis.modules import resolve_relative
from tpulint.analysis.param_routes import assigned_names, is_literal, tested_names
from tpulint.analysis.param_routes import literal as route_literal
from tpulint.analysis.python_ast import (
    defaulted_params,
    ends_program,
    imported_roots,
    self_attribute_name,
    tree_index,
)
from tpulint.analysis.python_ast import iter_child_nodes as ast_children
from tpulint.analysis.python_ast import walk as ast_walk
from tpulint.analysis.scope_facts import ScopeFacts, scope_facts
from tpulint.analysis.value_tables import (
    COPY_FUNCTIONS,
    HOST_PACKAGES,
    NUMPY_ONLY_METHODS,
    SIZE_ARGUMENT_METHODS,
    STRING_USE_METHODS,
    annotation_kind,
)

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# A mapping annotated with string keys (`Dict[str, Tensor]`, `Optional[Mapping[str, Any]]`).
_STR_KEYED = re.compile(
    r"^(typing\.)?(Optional\[)?(typing\.)?"
    r"(Dict|dict|Mapping|MutableMapping|OrderedDict)\[\s*str\s*,"
)

_MAX_ATOMS = 8
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

# What a file builds its models from, read from its text: convolutions (rows are
# batch x height x width), token or sequence layers (rows are batch x tokens), plain linear
# layers (rows are the batch). TPU302 grades a per-core batch's padding only where the batch
# is the row dimension of the model's matmuls (issue 21 item 5).
MODEL_LAYERS = {
    "c": re.compile(
        r"\b(?:Conv(?:Transpose)?[123]d|conv[123]d|create_model|resnet\d+|efficientnet\w*|"
        r"vit_\w+|UNet\w*|Unet\w*|torchvision\.models|segmentation_models_pytorch)\b"
    ),
    "s": re.compile(
        r"\b(?:input_ids|Embedding|MultiheadAttention|Transformer(?:Encoder|Decoder)?\w*|"
        r"LSTM|GRU|RNN|from_pretrained|AutoModel\w*|attention_mask|scaled_dot_product_attention"
        r"|PatchEmbed\w*)\b"
    ),
    "l": re.compile(r"\b(?:nn\.)?Linear\s*\("),
}


# The Trainer arguments Lightning 2 removed, read from the text: where a call passes one as a
# keyword, and where a class declares a field of that name (`tpu_cores: int = 8`). TPU001
# reports the problem once, at the call, with the fields that feed it as related places.
LEGACY_TRAINER_KEYWORDS = ("tpu_cores", "num_tpu_cores")
_LEGACY_KEYWORD_USE = re.compile(r"[(,]\s*(tpu_cores|num_tpu_cores)\s*=(?!=)")
# An indented `name = value` / `name: type = value` line that does not end with a comma (a
# parameter of a multi-line `def` or call does).
_LEGACY_FIELD = re.compile(
    r"^([ \t]+)(tpu_cores|num_tpu_cores)\s*(?::[^=\n]*)?=(?!=)[^\n]*?(?<!,)[ \t]*(?:#[^\n]*)?$",
    re.M,
)


def legacy_trainer_args(text: str) -> tuple[list[str], list[list]]:
    """The removed Trainer keywords a file passes to calls, and its indented `name =` /
    `name: type =` fields of those names as [name, line, column] (1-based)."""
    if "tpu_cores" not in text:
        return [], []
    used = sorted({m.group(1) for m in _LEGACY_KEYWORD_USE.finditer(text)})
    fields = []
    for match in _LEGACY_FIELD.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        fields.append([match.group(2), line, len(match.group(1)) + 1])
    return used, fields


# A literal every match of MODEL_LAYERS' pattern contains: a text with none of them is not
# searched with the pattern (an alternation after `\b` is tried at every word boundary).
_MODEL_LAYER_LITERALS = {
    "c": (
        "Conv", "conv", "create_model", "resnet", "efficientnet", "vit_", "UNet", "Unet",
        "torchvision.models", "segmentation_models_pytorch",
    ),
    "s": (
        "input_ids", "Embedding", "MultiheadAttention", "Transformer", "LSTM", "GRU", "RNN",
        "from_pretrained", "AutoModel", "attention_mask", "scaled_dot_product_attention",
        "PatchEmbed",
    ),
    "l": ("Linear",),
}  # fmt: skip


def model_layers(text: str) -> str:
    """The letters of MODEL_LAYERS whose pattern the text matches ("cl": convolutions and
    linear layers)."""
    return "".join(
        key
        for key, pattern in MODEL_LAYERS.items()
        if any(literal in text for literal in _MODEL_LAYER_LITERALS[key]) and pattern.search(text)
    )


_USE_METHODS = SIZE_ARGUMENT_METHODS | NUMPY_ONLY_METHODS
_UseTable = dict[str, tuple[list[int], list[int]]]


def _mentions_use_methods(text: str) -> bool:
    """Whether the text calls a size-argument or numpy-only method at all: when it does not,
    no name is used so and the walk for them is skipped."""
    return any(f".{method}(" in text for method in _USE_METHODS)


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
    # The values the arguments name (index_uses.value_texts), by position and by keyword
    arg_texts: list[list[str]] = field(default_factory=list)
    keyword_texts: dict[str, list[str]] = field(default_factory=dict)
    # The arguments that are the literal None, True, False or a string, by position (`"0"`,
    # `"1"`) and by keyword: what a test of the callee's parameter sees (`if p is None`,
    # `if p:`, `if mode == "cpu":`).
    literals: dict[str, bool | str | None] = field(default_factory=dict)
    # The arguments, by position or keyword, that may be None though no literal says so: a
    # name of the caller's own None-default parameter (`f(x, mask=mask)`), unless the code
    # before the call replaced it (`mask = make_mask(x)`), or a local that holds None
    # somewhere.
    maybe_none: list[str] = field(default_factory=list)
    # The arguments, by position or keyword, that are an attribute of the caller's `self`
    # (`f(x, self.unbounded)`), with its name: the caller's class decides what they are.
    self_attributes: dict[str, str] = field(default_factory=dict)
    # The tests of the calling function's parameters the call sits under (param_routes):
    # [test text, whether it runs where the test holds], and what it passes its callee's
    # parameters that such a test may read, by position or keyword: ["l", literal] or
    # ["p", the calling function's parameter passed on as is] (`{"*": ["s"]}` when it
    # spreads `*args`/`**kwargs`: nothing is known).
    conds: list[list[Any]] = field(default_factory=list)
    route_args: dict[str, list[Any]] = field(default_factory=dict)

    def to_json(self) -> list[Any]:
        return [
            self.form,
            self.target,
            self.line,
            list(self.guards),
            self.args,
            self.keywords,
            self.arg_texts,
            self.keyword_texts,
            self.literals,
            self.maybe_none,
            self.self_attributes,
            self.conds,
            self.route_args,
        ]

    @classmethod
    def from_json(cls, data: list[Any]) -> CallSite:
        return cls(data[0], data[1], data[2], tuple(data[3]), *data[4:13])


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
    # The values its body uses as integer indices (index_uses.index_uses)
    index_uses: list[str] = field(default_factory=list)
    # Its body only raises NotImplementedError (or it is an @abstractmethod): subclasses
    # implement it, so a call of it runs one of their overrides.
    abstract: bool = False
    # A collate function (tpulint.analysis.summary.is_collate_name): the string keys of the
    # batch dicts it builds and what it builds each from, "number" / "host" (Python values
    # and numpy, which Lightning's batch transfer leaves where they are) or "tensor"
    # (a tensor or a value not known). A dataset's `__getitem__`/`__iter__`: its keys, all
    # "tensor" (default_collate stacks numbers into tensors). The positions of a tuple it
    # returns are keys too: "#i/N" (element i of an N-tuple) and "#i"; "#?" when a collate
    # function returns something else than a tuple or a dict (_built_positions).
    built_keys: dict[str, str] = field(default_factory=dict)
    # Where its code puts tensors or modules: the device atoms of each `.to(d)`,
    # `device=d` and `.cuda()` (the marker atom "cuda"), as `placement_atoms` reads them.
    placements: list[list[Atom]] = field(default_factory=list)
    # The parameters annotated as tensors (`x: Tensor`, `mask: Optional[torch.BoolTensor]`,
    # `t: torch.Tensor | None`): what a `**batch` spread fills them with is a tensor.
    tensor_params: list[str] = field(default_factory=list)
    # The parameters that default to None: a call that leaves one out passes None, no tensor.
    none_params: list[str] = field(default_factory=list)
    # The parameters whose default is a function of a host package (`loss=log_loss` of
    # sklearn.metrics): what calling it gives is host data, never a tensor.
    host_defaults: list[str] = field(default_factory=list)
    # It takes `**kwargs`: parameter index len(params) + 1 stands for the values calls pass
    # by keywords it does not name.
    kwargs: bool = False
    # Every `return` gives a CUDA/MPS or CPU device (`torch.device(f"cuda:{i}")` or
    # `torch.device("cpu")`, directly or through a local): a device helper of a GPU script.
    device_returns: bool = False
    # The literal defaults of the parameters a test of its body may read (param_routes), the
    # parameters such tests read or its calls pass on as they are (never rebound), and how
    # many of `params` are keyword-only (the last ones).
    literal_defaults: dict[str, Any] = field(default_factory=dict)
    tested_params: list[str] = field(default_factory=list)
    kwonly: int = 0
    # `batch[self.key_out] = v` on a parameter: the atoms written at the key a constructor
    # argument names, by the attribute holding it (a module of a keyed pipeline, whose
    # forward passes one dict along: see ProjectModel.keyed_entry_kind).
    keyed_writes: dict[str, list[Atom]] = field(default_factory=dict)
    # Each `return {...}` of a dict literal of Trainer arguments (it has an "accelerator" or
    # "strategy" key): its string keys with their values (a str, number, bool or None
    # constant, else "?"), what a `Trainer(**settings())` or `{**settings(), ...}` gets.
    trainer_returns: list[dict[str, Any]] = field(default_factory=list)
    # A dataset's `__getitem__`/`__iter__`: what its item dicts hold at each string key as
    # built, before any collate: "number", "host" or "tensor" (a collate of the dataset's
    # own that lists `item["n"]` keeps the numbers: `built_keys`' "items:n").
    item_keys: dict[str, str] = field(default_factory=dict)
    # Any other function: what it writes at the string keys of a dict (`d["n"] = v`),
    # "cpu" for a torch factory's CPU tensor (`torch.tensor(graph.num_graphs)`, no device),
    # "tensor" for anything else. A helper of the step that builds its batch dict after
    # Lightning's transfer makes CPU tensors there (ProjectModel.batch_key_kind).
    written_keys: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "wk": self.written_keys,
            "ik": self.item_keys,
            "tr": self.trainer_returns,
            "kq": self.keyed_writes,
            "ld": self.literal_defaults,
            "tq": self.tested_params,
            "ko": self.kwonly,
            "dv": self.device_returns,
            "kw": self.kwargs,
            "bk": self.built_keys,
            "pl": self.placements,
            "tp": self.tensor_params,
            "np": self.none_params,
            "hd": self.host_defaults,
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
            "iu": self.index_uses,
            "ab": self.abstract,
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
            data.get("iu", []),
            data.get("ab", False),
            data.get("bk", {}),
            data.get("pl", []),
            data.get("tp", []),
            data.get("np", []),
            data.get("kw", False),
            data.get("hd", []),
            data.get("dv", False),
            data.get("ld", {}),
            data.get("tq", []),
            data.get("ko", 0),
            data.get("kq", {}),
            data.get("tr", []),
            data.get("ik", {}),
            data.get("wk", {}),
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
    decorators: list[str] = field(default_factory=list)  # dotted, as written (`dataclass`)
    # Names the class body declares with an annotation (`batch_size: int`, the fields of a
    # dataclass, NamedTuple, attrs or pydantic record): "number"/"host" when the annotation
    # says a Python value (`annotation_kind`), "tensor" when it names a tensor (`t.Tensor`,
    # `Optional[torch.FloatTensor]`, `List[Tensor]`), else "other".
    fields: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "f": self.fields,
            "d": self.decorators,
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
            data.get("d", []),
            data.get("f", {}),
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
    `= field(default=10)`), string keys of dict entries (`{"batch_size": 10}`). dict_keys: the
    string keys of every dict literal whatever their values (`{"accelerator": "tpu"}`: Trainer
    arguments assembled as a dict)."""

    calls: frozenset[str] = frozenset()
    keywords: frozenset[str] = frozenset()
    literal_keywords: frozenset[str] = frozenset()
    class_fields: frozenset[str] = frozenset()
    int_names: frozenset[str] = frozenset()
    dict_keys: frozenset[str] = frozenset()

    def to_json(self) -> list[list[str]]:
        return [
            sorted(self.calls),
            sorted(self.keywords),
            sorted(self.literal_keywords),
            sorted(self.class_fields),
            sorted(self.int_names),
            sorted(self.dict_keys),
        ]

    @classmethod
    def from_json(cls, data: list[list[str]]) -> Syntax:
        return cls(*(frozenset(part) for part in data))


def syntax_of(tree: ast.AST) -> Syntax:
    """The Syntax facts of a parsed tree."""
    syntax, _ = _read_tree(tree, syntax=True, uses=False)
    assert syntax is not None
    return syntax


def _read_tree(
    tree: ast.AST, *, syntax: bool, uses: bool
) -> tuple[Syntax | None, tuple[_UseTable, _UseTable]]:
    """What one iterative walk of a parsed tree collects: with `syntax`, its Syntax facts;
    with `uses`, the names it passes as sizes and calls numpy-only methods on (see
    `_size_uses`). One walk for both, with the summary's table of child fields and no visit
    of names and constants, which hold nothing asked here (2.4 times faster than `ast.walk`,
    measured); bound names are read from the binding statements' targets."""
    calls: set[str] = set()
    keywords: set[str] = set()
    literal: set[str] = set()
    fields: set[str] = set()
    ints: set[str] = set()
    keys: set[str] = set()
    size_args: dict[str, list[int]] = {}
    receivers: dict[str, list[int]] = {}
    stores: dict[str, list[int]] = {}
    functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    local_calls: list[tuple[str, bool, ast.Call]] = []
    call_type, name_type, attribute_type = ast.Call, ast.Name, ast.Attribute
    function_types = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    constant_type, unary_type = ast.Constant, ast.UnaryOp
    literal_types = (ast.Constant, ast.JoinedStr)
    leaves = (name_type, constant_type)
    node_type = ast.AST
    stack: list[ast.AST] = [tree]
    push, pop = stack.append, stack.pop
    while stack:
        node = pop()
        kind = type(node)
        if syntax:
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
                continue  # its aliases hold nothing either walk asks about
            elif kind is ast.Assign or kind is ast.AnnAssign:
                if _int_value(node.value):  # type: ignore[attr-defined]
                    targets = node.targets if kind is ast.Assign else [node.target]  # type: ignore[attr-defined]
                    for target in targets:
                        if type(target) is name_type:
                            ints.add(target.id)
                        elif type(target) is attribute_type:
                            ints.add(target.attr)
            elif kind in function_types:
                arguments = node.args  # type: ignore[attr-defined]
                positional = [*arguments.posonlyargs, *arguments.args]
                defaults = arguments.defaults
                for argument, default in zip(
                    positional[len(positional) - len(defaults) :], defaults, strict=True
                ):
                    if _int_value(default):
                        ints.add(argument.arg)
                for argument, default in zip(
                    arguments.kwonlyargs, arguments.kw_defaults, strict=True
                ):
                    if default is not None and _int_value(default):
                        ints.add(argument.arg)
            elif kind is ast.Dict:
                for key, value in zip(node.keys, node.values, strict=True):  # type: ignore[attr-defined]
                    if type(key) is constant_type and type(key.value) is str:
                        keys.add(key.value)
                        if _int_value(value):
                            ints.add(key.value)
        if uses:
            if kind in _BINDING_TARGETS:
                for target in _BINDING_TARGETS[kind](node):
                    for name in _bound_names(target):
                        stores.setdefault(name.id, []).append(name.lineno)
            elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                functions.setdefault(node.name, []).append(node)  # type: ignore[attr-defined]
            elif kind is call_type:
                func = node.func  # type: ignore[attr-defined]
                if (
                    isinstance(func, ast.Attribute)
                    and func.attr in NUMPY_ONLY_METHODS
                    and isinstance(func.value, ast.Name)
                ):
                    receivers.setdefault(func.value.id, []).append(func.value.lineno)
                elif isinstance(func, ast.Attribute) and func.attr in SIZE_ARGUMENT_METHODS:
                    args = node.args  # type: ignore[attr-defined]
                    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
                        args = args[0].elts
                    for arg in args:
                        for name in _arithmetic_names(arg):
                            size_args.setdefault(name.id, []).append(name.lineno)
                elif type(func) is name_type:
                    local_calls.append((func.id, False, node))  # type: ignore[arg-type]
                elif (
                    isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Name)
                    and func.value.id == "self"
                ):
                    local_calls.append((func.attr, True, node))  # type: ignore[arg-type]
        for field_name in _child_fields(kind):
            child = getattr(node, field_name)
            if type(child) is list:
                for item in child:
                    if isinstance(item, node_type) and type(item) not in leaves:
                        push(item)
            elif isinstance(child, node_type) and type(child) not in leaves:
                push(child)
    facts = (
        Syntax(
            frozenset(calls),
            frozenset(keywords),
            frozenset(literal),
            frozenset(fields),
            frozenset(ints),
            frozenset(keys),
        )
        if syntax
        else None
    )
    if not uses:
        return facts, ({}, {})
    return facts, _use_tables(size_args, receivers, stores, functions, local_calls)


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
    scope: ScopeFacts = field(default_factory=ScopeFacts)  # where its code runs
    model_layers: str = ""  # see MODEL_LAYERS
    # See LEGACY_TRAINER_KEYWORDS: keywords passed to calls, and fields [name, line, column].
    legacy_keywords: list[str] = field(default_factory=list)
    legacy_fields: list[list] = field(default_factory=list)
    # What the code contains, for the rules' screens (None when `ast` could not parse it).
    syntax: Syntax | None = None
    # Why summarising the file failed (an internal error the run reports); never cached.
    failure: str | None = None
    # Calls of the module's own functions from its top level (a `__main__` block): [name,
    # device atoms of each positional argument, of each keyword] (placement_atoms'
    # reading), what a placement on a parameter of a script's loop resolves through.
    top_calls: list[list[Any]] = field(default_factory=list)
    # The names its `from m import *` of project modules bind to imports of theirs (`torch`
    # of a `utils` that imports it), given to the summary by the project (star_bindings).
    star_bindings: dict[str, str] = field(default_factory=dict)
    # What a `from <this module> import *` binds: the names of its `__all__` when it sets one
    # to a literal list (None: every public name; empty when set some other way).
    exports: list[str] | None = None
    # How many calls of each capitalised name (`Drop(...)`, `mod.Drop(...)`) the file makes,
    # in any scope: the constructions a keyed pipeline's reading must all see (calls in
    # `__init__` and at module level are not in the functions' calls).
    class_calls: dict[str, int] = field(default_factory=dict)
    # Whether the module's body itself (not a `try`, an `if` or a function) imports torch_xla:
    # the module cannot be imported without it, so its project runs on TPU (or XLA) hosts.
    xla_import: bool = False
    # The attribute names the file's code increments (`self.n += 1`, `pl_module.seen[k] +=
    # 1`): what grows a counter a first-N guard of another file bounds (guards.FIRST_N).
    incremented: list[str] = field(default_factory=list)
    # The names the module's top level binds only to string literals (`IMAGE_MASKS =
    # "image_masks"`, `KEY: Final[str] = "mask"`), and `Cls.NAME` for such names of a
    # top-level class's body (`class Keys: MASK = "mask"`): dict keys where code reads them.
    string_constants: list[str] = field(default_factory=list)
    # The names the module's top level binds once to a CPU tensor (`ARRANGE =
    # torch.tensor([...])`, a torch factory without a device) and never rebinds, changes in
    # place or moves (`.to(`, `.cuda(`): constants built at import time, where code reads them.
    cpu_constants: list[str] = field(default_factory=list)
    # The functions the file hands on as values rather than calls (`map(score, xs)`,
    # `hooks = {"r2": score}`, `self.fn = score`, `checkpoint(self._block, x)`): the names
    # of its own functions and methods and of imported names used so ("name"), and ".name"
    # for `self.name` / `cls.name` of a method. Their calls are not all seen: what the seen
    # calls pass does not say what the parameters hold (ProjectModel.param_value).
    value_refs: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "vr": self.value_refs,
            "st": self.string_constants,
            "ct": self.cpu_constants,
            "xi": self.xla_import,
            "ic": self.incremented,
            "cc": self.class_calls,
            "tc": self.top_calls,
            "m": self.module,
            "pk": self.is_package,
            "i": self.imports,
            "c": [c.to_json() for c in self.classes],
            "f": [f.to_json() for f in self.functions],
            "ok": self.parsed,
            "so": self.sampler_injection_off,
            "sc": self.scope.to_json(),
            "ml": self.model_layers,
            "lk": self.legacy_keywords,
            "lf": self.legacy_fields,
            "sx": self.syntax.to_json() if self.syntax is not None else None,
            "sb": self.star_bindings,
            "ex": self.exports,
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
            ScopeFacts.from_json(data["sc"]),
            data.get("ml", ""),
            data.get("lk", []),
            data.get("lf", []),
            Syntax.from_json(data["sx"]) if data["sx"] is not None else None,
            top_calls=data.get("tc", []),
            star_bindings=data.get("sb", {}),
            exports=data.get("ex"),
            class_calls=data.get("cc", {}),
            xla_import=data.get("xi", False),
            incremented=data.get("ic", []),
            string_constants=data.get("st", []),
            cpu_constants=data.get("ct", []),
            value_refs=data.get("vr", []),
        )


def _trainer_returns(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[dict[str, Any]]:
    """See FunctionSummary.trainer_returns (the function's own returns, not a nested
    function's)."""
    out: list[dict[str, Any]] = []
    stack: list[ast.AST] = list(node.body)
    while stack:
        current = stack.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(current, ast.Return) and isinstance(current.value, ast.Dict):
            entries: dict[str, Any] = {}
            for key, value in zip(current.value.keys, current.value.values, strict=False):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    constant = isinstance(value, ast.Constant) and (
                        value.value is None or isinstance(value.value, (str, int, float, bool))
                    )
                    entries[key.value] = value.value if constant else "?"  # type: ignore[union-attr]
            if "accelerator" in entries or "strategy" in entries:
                out.append(entries)
            continue
        stack.extend(ast_children(current))
    return out


def _class_calls(tree: ast.Module) -> dict[str, int]:
    """See ModuleSummary.class_calls."""
    counts: dict[str, int] = {}
    for node in tree_index(tree).of_type(tree, ast.Call):
        func = node.func  # type: ignore[attr-defined]
        name = (
            func.id
            if isinstance(func, ast.Name)
            else func.attr
            if isinstance(func, ast.Attribute)
            else None
        )
        if name and name[0].isupper():
            counts[name] = counts.get(name, 0) + 1
    return counts


def _value_references(tree: ast.Module) -> list[str]:
    """See ModuleSummary.value_refs: names loaded other than as the callee of a call, the
    object of an attribute (`ops.score`: `ops` is a module) or a decorator: a function the
    file defines ("name"), an imported name ("@name", what the file's imports bind it to),
    `module.name` of an imported module ("@module.name"), and `self.name` / `cls.name` of a
    method the file defines (".name")."""
    index = tree_index(tree)
    skipped: set[int] = set()
    for node in index.of_type(tree, ast.Call):
        skipped.add(id(node.func))  # type: ignore[attr-defined]
    defined: set[str] = set()
    for node in index.of_type(tree, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        if not isinstance(node, ast.ClassDef):
            defined.add(node.name)  # type: ignore[attr-defined]
        for decorator in node.decorator_list:  # type: ignore[attr-defined]
            skipped.add(id(decorator))
    imported: set[str] = set()
    modules: set[str] = set()
    for node in index.of_type(tree, ast.Import, ast.ImportFrom):
        for alias in node.names:  # type: ignore[attr-defined]
            if isinstance(node, ast.ImportFrom):
                imported.add(alias.asname or alias.name)
            else:
                modules.add(alias.asname or alias.name.split(".", 1)[0])
    found: set[str] = set()
    for node in index.of_type(tree, ast.Attribute):
        value = node.value  # type: ignore[attr-defined]
        if isinstance(value, ast.Name):
            skipped.add(id(value))
        if id(node) in skipped or not isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
            continue
        attr = node.attr  # type: ignore[attr-defined]
        if isinstance(value, ast.Name) and value.id in ("self", "cls") and attr in defined:
            found.add("." + attr)
        elif isinstance(value, ast.Name) and (value.id in modules or value.id in imported):
            found.add(f"@{value.id}.{attr}")
    for node in index.of_type(tree, ast.Name):
        if id(node) in skipped or not isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
            continue
        name = node.id  # type: ignore[attr-defined]
        if name in defined:
            found.add(name)
        elif name in imported:
            found.add("@" + name)
    return sorted(found)


def _binding_counts(tree: ast.Module) -> dict[str, int]:
    """How often the module binds each name, anywhere (2 for a `global`, `nonlocal` or an
    import: rebound elsewhere); the counts do not depend on the order they are read in."""
    names: dict[str, int] = {}
    for node in tree_index(tree).of_type(tree, ast.Name, ast.Global, ast.Nonlocal, ast.alias):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                names[node.id] = names.get(node.id, 0) + 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                names[name] = names.get(name, 0) + 2  # rebound elsewhere
        elif isinstance(node, ast.alias):
            local = (node.asname or node.name).split(".", 1)[0]
            names[local] = names.get(local, 0) + 2
    return names


_MUTATING_METHODS = frozenset(
    {"update", "append", "extend", "insert", "setdefault", "__setitem__", "add", "pop", "clear"}
)


def _constant_tables(tree: ast.Module) -> dict[str, ast.expr]:
    """The top-level `NAME = {...}` / `[...]` / `(...)` of constants only (numbers, strings,
    booleans, None; nested displays of them)."""
    found: dict[str, ast.expr] = {}
    for statement in tree.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and isinstance(statement.value, (ast.Dict, ast.List, ast.Tuple, ast.Set))
            and _constant_display(statement.value)
        ):
            found[statement.targets[0].id] = statement.value
    return found


def _constant_display(node: ast.expr, depth: int = 0) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if depth > 3:
        return False
    if isinstance(node, ast.Dict):
        parts = [*node.keys, *node.values]
        return bool(parts) and all(p is not None and _constant_display(p, depth + 1) for p in parts)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return bool(node.elts) and all(_constant_display(e, depth + 1) for e in node.elts)
    return False


_MOVING_METHODS = frozenset({"to", "cuda", "type", "to_device"})


def _mutated_and_moved_names(tree: ast.Module) -> tuple[frozenset[str], frozenset[str]]:
    """In one walk, the names the module's code changes in place (`NAME[k] = v`, `del`,
    `+=`, `NAME.update(...)`-like method calls) and the names it moves or may move to a
    device (`NAME.to(device)`, `NAME.cuda()` anywhere, whether or not the result is bound
    back)."""
    mutated: set[str] = set()
    moved: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, (ast.Store, ast.Del))
            and isinstance(node.value, ast.Name)
        ):
            mutated.add(node.value.id)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
        ):
            if node.func.attr in _MUTATING_METHODS:
                mutated.add(node.func.value.id)
            if node.func.attr in _MOVING_METHODS:
                moved.add(node.func.value.id)
    return frozenset(mutated), frozenset(moved)


def _lambda_functions(tree: ast.Module, defined: set[str]) -> dict[int, ast.Assign]:
    """The module-level assignments of a lambda to a name the module binds nowhere else
    (`to_db = lambda x: 10 * np.log10(x)`), by `id`: functions of the module."""
    found: dict[int, ast.Assign] = {}
    names = _binding_counts(tree)
    for statement in tree.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and isinstance(statement.value, ast.Lambda)
        ):
            found[id(statement)] = statement
    return {
        key: node
        for key, node in found.items()
        if names.get(node.targets[0].id) == 1  # type: ignore[attr-defined]
        and node.targets[0].id not in defined  # type: ignore[attr-defined]
    }


def _lambda_def(node: ast.Assign) -> ast.FunctionDef:
    """The function a module-level `name = lambda ...: body` defines."""
    value = node.value
    assert isinstance(value, ast.Lambda)
    name = node.targets[0]
    assert isinstance(name, ast.Name)
    returned = ast.copy_location(ast.Return(value=value.body), value.body)
    returned.end_lineno, returned.end_col_offset = value.body.end_lineno, value.body.end_col_offset
    function = ast.FunctionDef(
        name=name.id, args=value.args, body=[returned], decorator_list=[], returns=None
    )
    function.type_params = []
    return ast.copy_location(function, node)


def _string_constants(body: list[ast.stmt], prefix: str = "") -> list[str]:
    """See ModuleSummary.string_constants: the names every binding of `body` (a module's
    or a top-level class's) gives a string literal; a name bound otherwise too is left out."""
    strings: set[str] = set()
    other: set[str] = set()
    nested: list[str] = []
    for statement in body:
        if isinstance(statement, ast.ClassDef) and not prefix:
            nested.extend(_string_constants(statement.body, f"{statement.name}."))
            other.add(statement.name)
            continue
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        elif isinstance(statement, ast.AugAssign):
            targets = [statement.target]
        elif not isinstance(statement, (ast.Expr, ast.Import, ast.ImportFrom, ast.Pass)):
            # bindings in compound statements or defs: their names are not constants
            other.update(
                n.id
                for n in ast.walk(statement)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            )
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                other.add(statement.name)
            continue
        for target in targets:
            if not isinstance(target, ast.Name):
                other.update(
                    n.id
                    for n in ast.walk(target)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                )
                continue
            is_string = (
                isinstance(value, ast.Constant)
                and isinstance(value.value, str)
                and not isinstance(statement, ast.AugAssign)
            )
            (strings if is_string else other).add(target.id)
    return sorted(f"{prefix}{name}" for name in strings - other) + nested


def _exports(tree: ast.Module) -> list[str] | None:
    """The names a module's top-level `__all__` lists (see ModuleSummary.exports)."""
    exports: list[str] | None = None
    for statement in tree.body:
        targets: list[ast.expr] = []
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
            targets = [statement.target]
        if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        value = statement.value  # type: ignore[attr-defined]
        names = (
            [e.value for e in value.elts if isinstance(e, ast.Constant)]
            if isinstance(value, (ast.List, ast.Tuple))
            else None
        )
        if names is None or not all(isinstance(n, str) for n in names):
            return []
        exports = names if isinstance(statement, ast.Assign) else [*(exports or []), *names]
    return exports


def summarize(
    text: str,
    path: str,
    module: str | None,
    is_package: bool,
    star_bindings: dict[str, str] | None = None,
) -> ModuleSummary:
    """The summary of one file (an empty one, `parsed=False`, if `ast` rejects it);
    `star_bindings`: the imports its star imports bring (ModuleSummary.star_bindings)."""
    summary = ModuleSummary(path, module, is_package)
    summary.star_bindings = dict(star_bindings or {})
    summary.sampler_injection_off = bool(SAMPLER_INJECTION_OFF.search(text))
    summary.model_layers = model_layers(text)
    summary.legacy_keywords, summary.legacy_fields = legacy_trainer_args(text)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        summary.parsed = False
        return summary
    try:
        syntax, use_tables = _read_tree(tree, syntax=True, uses=_mentions_use_methods(text))
        summary.syntax = syntax
        summary.exports = _exports(tree)
        summary.string_constants = _string_constants(tree.body)
        summary.class_calls = _class_calls(tree)
        summary.value_refs = _value_references(tree)
        summary.xla_import = "torch_xla" in imported_roots(tree.body)
        if "+" in text:
            summary.incremented = sorted(incremented_attributes(tree))
        summarizer = _Summarizer(summary, text)
        summarizer.module(tree, use_tables)
        summary.scope = scope_facts(tree, summary, text, summarizer.node_keys)
    except RecursionError:
        summary.parsed = False
        summary.syntax = None
    return summary


class _Summarizer(ValueEvaluator):
    """Walks one module in source order: the structure and calls for its summary and, in
    query mode (`snapshots` given), what every local name holds before each statement, for
    tpulint.analysis.value_query to evaluate the rules' expressions in."""

    def __init__(
        self,
        summary: ModuleSummary,
        text: str,
        snapshots: dict[int, tuple[Any, ...]] | None = None,
        never_run: frozenset[tuple[int, int]] = frozenset(),
    ) -> None:
        self.summary = summary
        self.text = text
        self.snapshots = snapshots
        self.query = snapshots is not None
        # The block being walked and the index of its statement being read (`_preceding`).
        self._before: tuple[list[ast.stmt], int] = ([], 0)
        # (line, column) of the first statement of each branch the project's calls decide
        # never runs (query mode: `isinstance(p, torch.Tensor)` of a parameter every call
        # passes a Python number): what it binds is no value after the `if`.
        self.never_run = never_run
        self.depth = 0  # how many functions enclose the code being walked
        # Function key -> the parameters that default to None, its enclosing functions'
        # included (a call forwarding one may pass None: `f(x, mask=mask)`).
        self.optional_params: dict[str, set[str]] = {}
        # function key -> its None-default parameters that an `assert p is None` at the top
        # of its body (before the line) pins to None: passed on, they pass None.
        self.asserted_none: dict[str, dict[str, int]] = {}
        # Function key -> its parameters no code of its body rebinds (param_routes).
        self.routable: dict[str, frozenset[str]] = {}
        # Function key -> whether it is a collate function (is_collate_name, or named in a
        # `collate_fn=` argument of this file: `collate_names`).
        self.collates: dict[str, bool] = {}
        self.collate_names: frozenset[str] = frozenset()
        # The ids of the functions' own statement lists (see `block`'s error path).
        self.function_bodies: set[int] = set()
        # Function key of a dataset's item method -> its names that hold strings
        # (string_names), for the keys default_collate leaves as strings.
        self.item_strings: dict[str, frozenset[str]] = {}
        self._line_starts: list[int] | None = None
        self._conditions: dict[Any, frozenset[str]] = {}
        # class qualname -> its methods (a lazy-initialisation block may call one that sets
        # the flag it tests).
        self.class_methods: dict[str, dict[str, ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        # Lines that read the rank or world size, where classes may be datasets (only their
        # rank-awareness is ever asked).
        self.rank_lines: list[int] = []
        self.dist_rank_lines: list[int] = []
        self.rank_source_lines: list[int] = []
        if not self.query and ("Dataset" in text or "DataPipe" in text or "Iterable" in text):
            self.rank_lines = self._lines_with(RANK_TOKENS)
            if self.rank_lines:
                self.dist_rank_lines = self._lines_matching(distributed_rank_pattern(text))
                self.rank_source_lines = self._lines_matching(RANK_SOURCES)
        self.counts: dict[str, int] = {}
        self.module_imports: dict[str, str] = {}
        self.module_names: set[str] = set()  # module-level defs, lambdas and classes
        # Module-level `name = lambda ...` assignments read as functions (_lambda_functions).
        self.lambda_functions: dict[int, ast.Assign] = {}
        self.star_import = False  # whether the module has a `from m import *`
        # The function keys and class qualnames by `id` of their node (for the scope facts).
        self.node_keys: dict[int, str] = {}
        # name -> (the sorted lines where it is passed as a size (`x.view(n, rows, cols)`),
        # where it is bound); the same for the receivers of numpy-only methods.
        self.size_uses: dict[str, tuple[list[int], list[int]]] = {}
        self.numpy_uses: dict[str, tuple[list[int], list[int]]] = {}
        # `if` statements (by `id`) with a branch the code before makes unreachable: "body" or
        # "else" (`if n is None: n = ...` and then `if n is not None: ... else: <never>`).
        self.dead_branches: dict[int, str] = {}
        # Module global -> the atoms the module binds to it (at its top level).
        self.module_globals: dict[str, list[Atom]] = {}
        # The names whose value the module changes in place (`TABLE[k] = v`,
        # `TABLE.update(...)`): what their top-level binding holds says less.
        self.mutated_names: frozenset[str] = frozenset()
        self.moved_names: frozenset[str] = frozenset()
        # The imported names that are CPU tensor constants of project modules (set by the
        # value query from the project model; see imported_cpu_constant).
        self.imported_cpu: frozenset[str] = frozenset()
        # The module globals bound once, at the top level, to a display of constants and
        # never changed in place (`TYPES = {"car": 1, "bike": 2}`): what they hold.
        self.constant_tables: dict[str, list[Atom]] = {}
        # name -> how often the module binds it anywhere (_binding_counts).
        self.binding_counts: dict[str, int] = {}
        # Placements naming a module global or a namespace attribute, settled at the end:
        # (function, index in its placements, "global" | "namespace", name).
        self.pending_placements: list[tuple[FunctionSummary, int, str, str]] = []
        # Top-level call arguments naming a global or a namespace attribute, settled at the
        # end: (record, position or keyword, "global" | "namespace", name).
        self.pending_top: list[tuple[list[Any], Any, str, str]] = []
        # attribute -> the device atoms stored to it on a value that is not `self`
        # (`args.device = torch.device(...)`), where the module binds one.
        self.namespace_stores: dict[str, list[Atom]] = {}
        # The lines that mention a call an integer index use needs (a cheap screen).
        self.index_use_lines: list[int] = []
        line, seen = 1, 0
        for match in INDEX_USE_WORDS.finditer(text):
            line += text.count("\n", seen, match.start())
            seen = match.start()
            self.index_use_lines.append(line)

    # --- structure ---------------------------------------------------------------------

    def module(
        self, tree: ast.Module, use_tables: tuple[_UseTable, _UseTable] | None = None
    ) -> None:
        """Walk the module; `use_tables`: its size and numpy uses when the caller's walk of
        the tree collected them already (`_read_tree`)."""
        for statement in tree.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.module_names.add(statement.name)
        self.lambda_functions = _lambda_functions(tree, self.module_names)
        self.binding_counts = _binding_counts(tree)
        self.mutated_names, self.moved_names = _mutated_and_moved_names(tree)
        self.constant_tables = {
            name: self.atoms(value, Scope(None, {}))
            for name, value in _constant_tables(tree).items()
            if self.binding_counts.get(name) == 1 and name not in self.mutated_names
        }
        if "collate_fn" in self.text:
            self.collate_names = collate_argument_names(tree)
        self.module_names.update(node.targets[0].id for node in self.lambda_functions.values())  # type: ignore[attr-defined]
        if use_tables is not None:
            self.size_uses, self.numpy_uses = use_tables
        elif _mentions_use_methods(self.text):
            self.size_uses, self.numpy_uses = _size_uses(tree)
        # The names the star imports bind come first: the module's own imports rebind them.
        # (A name the module assigns at its top level is the module's own: `np = None`.)
        assigned = {
            node.id
            for statement in tree.body
            if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign))
            for target in getattr(statement, "targets", None) or [statement.target]  # type: ignore[attr-defined]
            for node in ast_walk(target)
            if isinstance(node, ast.Name)
        }
        brought = {k: v for k, v in self.summary.star_bindings.items() if k not in assigned}
        self.module_imports.update(brought)
        scope = Scope(None, self.module_imports)
        self.block(tree.body, scope, [], None)
        self.summary.imports = {
            name: target
            for name, target in self.module_imports.items()
            if brought.get(name) != target
        }
        self._settle_placements()
        self.summary.cpu_constants = sorted(
            name
            for name in self.module_globals
            if self.cpu_constant(name) and name not in self.module_names
        )

    def global_atoms(self, name: str, scope: Scope) -> list[Atom] | None:
        """A module global read in a function that the module's top level (so far) binds
        only to the CPU on a TPU host (`device = "cuda" if torch.cuda.is_available() else
        "cpu"`): `x.to(device)` makes a host tensor there. A table of constants the module
        binds once and never changes (`constant_tables`): what it holds, read anywhere.
        Other globals stay unknown."""
        table = self.constant_tables.get(name)
        if table is not None:
            # `TYPES = {"car": 1, "bike": 2}` bound once and never changed: its entries are
            # Python values (`kinds == TYPES[name]` compares with a number)
            return list(table)
        if self.binding_counts.get(name) != 1:
            return None
        held = self.module_globals.get(name)
        if scope.info is not None and held == ["cpu_device"]:
            return ["cpu_device"]
        if self.cpu_constant(name):
            return ["cpu"]
        return None

    def imported_cpu_constant(self, name: str) -> bool:
        """`from .tables import ORDER` of a project module's CPU tensor constant (the query
        walker is told them: `imported_cpu`), not rebound, changed in place or moved here."""
        return (
            name in self.imported_cpu
            and self.binding_counts.get(name, 0) <= 2  # the import itself counts 2
            and name not in self.mutated_names
            and name not in self.moved_names
        )

    def cpu_constant(self, name: str) -> bool:
        """`ARRANGE = torch.tensor([...])` at the top level (a torch factory without a
        device), never rebound, changed in place or moved (`.to(`, `.cuda(`): a CPU tensor
        built at import time (ModuleSummary.cpu_constants)."""
        return (
            self.binding_counts.get(name) == 1
            and self.module_globals.get(name) == ["cpu"]
            and name not in self.mutated_names
            and name not in self.moved_names
        )

    def _settle_placements(self) -> None:
        """Resolve the placements that name a module global (`x.to(DEVICE)`) or an attribute
        of a namespace (`x.to(args.device)`) by what the whole module binds to them (a
        `__main__` block binds both after the functions that read them)."""
        for record, slot, how, name in self.pending_top:
            stores = self.module_globals if how == "global" else self.namespace_stores
            held = stores.get(name)
            value = list(held) if held else ["unknown"]
            if isinstance(slot, int):
                record[1][slot] = value
            else:
                record[2][slot] = value
        settled: dict[int, list[list[Atom]]] = {}
        for info, index, how, name in self.pending_placements:
            stores = self.module_globals if how == "global" else self.namespace_stores
            held = stores.get(name)
            settled.setdefault(id(info), list(info.placements))[index] = (
                list(held) if held else ["unknown"]
            )
        for info, _, _, _ in self.pending_placements:
            if id(info) in settled:
                unique: list[list[Atom]] = []
                for placement in settled.pop(id(info)):
                    if placement not in unique:
                        unique.append(placement)
                info.placements = unique

    def _record_none_args(self, call: CallSite, node: ast.Call, scope: Scope) -> None:
        """The call's arguments that are the literal None, True or False, those that may
        hold None (a name of a None-default parameter of the calling function, or a name
        whose value may be None), and those that are an attribute of `self`."""
        optional = self.optional_params.get(scope.info.key, set()) if scope.info else set()
        named = [
            (str(i), a)
            for i, a in enumerate(a for a in node.args if not isinstance(a, ast.Starred))
        ]
        named += [(k.arg, k.value) for k in node.keywords if k.arg is not None]
        asserted = self.asserted_none.get(scope.info.key, {}) if scope.info else {}
        for key, value in named:
            if isinstance(value, ast.Constant) and (
                value.value is None or isinstance(value.value, (bool, str))
            ):
                call.literals[key] = value.value
            elif (
                isinstance(value, ast.Name)
                and value.id in asserted
                and asserted[value.id] < node.lineno
            ):
                call.literals[key] = None  # `assert mask is None` above: it passes None
            elif isinstance(value, ast.Name) and (
                (value.id in optional and _unchanged_param(scope, value.id))
                or "none" in scope.env.get(value.id, ())
            ):
                call.maybe_none.append(key)
            elif (
                isinstance(value, ast.Attribute)
                and isinstance(value.value, ast.Name)
                and value.value.id == "self"
            ):
                call.self_attributes[key] = value.attr

    def _route_facts(
        self, info: FunctionSummary, node: ast.FunctionDef | ast.AsyncFunctionDef, params: list[str]
    ) -> None:
        """What the project model's routes need of a function (param_routes): the parameters
        its body never rebinds, those its tests read or its calls pass on as they are, their
        literal defaults, and the number of keyword-only parameters."""
        assigned: set[str] = set()
        for statement in node.body:
            assigned |= assigned_names(statement)
        routable = frozenset(p for p in params if p not in assigned)
        self.routable[info.key] = routable
        info.kwonly = len(node.args.kwonlyargs)
        if not routable:
            return
        tested: set[str] = set()
        for child in ast_walk(ast.Module(body=node.body, type_ignores=[])):
            if isinstance(child, ast.If):
                tested |= tested_names(child.test) & routable
            elif isinstance(child, ast.Call):
                for value in (*child.args, *(k.value for k in child.keywords)):
                    if isinstance(value, ast.Name) and value.id in routable:
                        tested.add(value.id)
        info.tested_params = sorted(tested)
        for arg, default in defaulted_params(node.args):
            if default is not None and arg.arg in tested:
                value = route_literal(default)
                if is_literal(value):
                    info.literal_defaults[arg.arg] = value

    def _record_route_args(
        self, call: CallSite, node: ast.Call, pending: tuple[Any, ...], scope: Scope
    ) -> None:
        """The tests of the calling function's parameters a call sits under, and what it
        passes its callee that such tests read: literals and parameters passed on."""
        routable = self.routable.get(scope.info.key, frozenset()) if scope.info else frozenset()
        if routable:
            for item in pending:
                if isinstance(item, _Cond) and tested_names(item.expr) & routable:
                    call.conds.append([self.segment(item.expr), item.holds])
        call.route_args["="] = ["n"]  # what it passes was read (a left-out one: the default)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            call.route_args["*"] = ["s"]
            return
        named = [(str(i), a) for i, a in enumerate(node.args)]
        named += [(k.arg, k.value) for k in node.keywords if k.arg is not None]
        for key, value in named:
            found = route_literal(value)
            if is_literal(found):
                call.route_args[key] = ["l", found]
            elif isinstance(value, ast.Name) and value.id in routable:
                call.route_args[key] = ["p", value.id]

    def _key(self, qualname: str) -> str:
        index = self.counts.get(qualname, 0)
        self.counts[qualname] = index + 1
        return f"{qualname}#{index}"

    def block(
        self,
        statements: list[ast.stmt],
        scope: Scope,
        names: list[str],
        klass: ClassSummary | None,
    ) -> None:
        """Walk statements in source order; `names` is the qualname prefix; `klass` the class
        whose body this is (directly)."""
        saved = scope.guards
        saved_error = scope.error_path
        # The error path: what a block runs before its `raise` (or `sys.exit()`) runs when
        # the step fails, not every step (its own statements; a nested block may leave
        # before the raise).
        # (A call that ends the program counts in a branch only: at the end of a function's
        # own body it is debugging code that runs, `print(x.shape); exit()` in a step.)
        exits = id(statements) not in self.function_bodies
        raises = max(
            (
                i
                for i, s in enumerate(statements)
                if isinstance(s, ast.Raise) or (exits and ends_program(s))
            ),
            default=-1,
        )
        surely_set: set[str] = set()  # names set when None by an earlier statement
        for index, statement in enumerate(statements):
            # (the `raise` itself too: its exception is built only when the code raises)
            scope.error_path = index <= raises
            if isinstance(statement, ast.If) and isinstance(statement.test, ast.Constant):
                # `if False:` (code switched off by hand) never runs; `if True:`'s else neither.
                self.dead_branches[id(statement)] = "else" if statement.test.value else "body"
            elif surely_set and isinstance(statement, ast.If):
                tested = _none_test(statement.test)
                if tested is not None and tested[0] in surely_set:
                    self.dead_branches[id(statement)] = "body" if tested[1] else "else"
            self._before = (statements, index)
            self.statement(statement, scope, names, klass)
            set_name = _sets_when_none(statement)
            if set_name is not None:
                surely_set.add(set_name)
            elif surely_set:
                surely_set -= _rebound_names(statement)
            exit_test = _early_exit_test(statement)
            if exit_test is not None:
                # Code after `if T: return` runs where T fails.
                scope.guards = (
                    *scope.guards,
                    _Test(exit_test, True, scope.cls),
                    _Cond(exit_test, False),
                )
                if not self.query and self.initialises_once(
                    exit_test, statements[index + 1 :], scope
                ):
                    # `if self.initialized: return` ... `self.initialized.fill_(True)`: the
                    # rest of the block runs once, like a lazy initialisation's body.
                    scope.guards = (*scope.guards, RARE)
                elif not self.query:
                    # `cnt = self.seen[split]; if cnt > N: return`: the rest runs for the
                    # first N calls, if the project grows the counter (settled there).
                    scope.guards = (
                        *scope.guards,
                        *self.first_n_counters(exit_test, False, statements[:index]),
                    )
        scope.guards = saved
        scope.error_path = saved_error

    def statement(
        self, node: ast.stmt, scope: Scope, names: list[str], klass: ClassSummary | None
    ) -> None:
        if self.snapshots is not None:
            self.snapshots[id(node)] = _snapshot(scope)
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
                    self.star_import = True
                    continue
                scope.imports[alias.asname or alias.name] = f"{base}.{alias.name}"
            return
        if isinstance(node, ast.If):
            self.expression(node.test, scope)
            lazy = not self.query and (
                self.lazy_block(node, scope) or self.first_n_block(node, scope)
            )
            # A branch that only warns reports an abnormal condition: rare, like a lazy block;
            # one the code before makes unreachable never runs.
            dead = self.dead_branches.get(id(node))
            rare = (
                lazy
                or _warns_only(node.body)
                or _reports_anomaly(node.test, node.body)
                or dead == "body"
            )
            # `if self.seen[split] < N:` with a counter the project grows elsewhere (an
            # epoch-end callback counting batches): settled by the project.
            counters = (
                ()
                if rare or self.query
                else self.first_n_counters(node.test, True, self._preceding(node))
            )
            saved = scope.guards
            scope.guards = (
                *saved,
                _Test(node.test, False, scope.cls),
                _Cond(node.test, True),
                *((RARE,) if rare else ()),
                *counters,
            )
            # Each branch's bindings are journaled, so both start from the same state and
            # a name holds, after the `if`, what either branch left in it.
            holds, fails = self.narrowing(node.test, scope)
            scope.journals.append({})
            for name, atoms in holds.items():
                set_local(scope, name, atoms)
            # `if torch.cuda.is_available():` never runs its body on a TPU host: the device
            # choices it makes (host values it returns or binds: device names and objects)
            # are none there, so `get_device()` returns its CPU fallback. Tensors it binds or
            # returns (`x.cuda()`) are kept: the name holds a tensor on the other paths too,
            # and an unresolved parameter alone would lose that it is one.
            cuda_only = self.cuda_check(node.test, scope)
            outer_cuda_only = scope.cuda_only
            scope.cuda_only = outer_cuda_only or cuda_only
            self.block(node.body, scope, names, klass)
            scope.cuda_only = outer_cuda_only
            body_journal = scope.journals.pop()
            body_values = {name: scope.env.get(name) for name in body_journal}
            for name, old in body_journal.items():
                _restore(scope.env, name, old)
            # The else runs where the test fails: rare after `if batch_idx != 0:` or `if not
            # self.debug:` (each name and shape read on its rare side).
            negated = isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
            scope.guards = (
                *saved,
                _Test(node.test, True, scope.cls, device=negated),
                _Cond(node.test, False),
            )
            if _warns_only(node.orelse) or dead == "else":
                scope.guards = (*scope.guards, RARE)
            scope.journals.append({})
            for name, atoms in fails.items():
                set_local(scope, name, atoms)
            self.block(node.orelse, scope, names, klass)
            else_journal = scope.journals.pop()
            scope.guards = saved
            for journal in (body_journal, else_journal):
                for name, old in journal.items():
                    _note(scope, name, old)  # the value before the `if`, for an outer branch
            body_dead = self._never_runs(node.body)
            else_dead = self._never_runs(node.orelse)
            for name in {*body_journal, *else_journal}:
                before = body_journal[name] if name in body_journal else else_journal[name]
                in_body = body_values.get(name) if name in body_journal else before
                if body_dead:
                    in_body = before
                if _exits(node.body) and _host_narrowed(fails.get(name)):
                    # `if not isinstance(size, int): raise TypeError(...)`: past the `if`,
                    # `size` is what the failing test says (a Python number)
                    in_body = None
                if (
                    cuda_only
                    and in_body is not None
                    and in_body is not MISSING
                    and all_host(in_body)
                ):
                    in_body = before
                if (
                    tensor_on_cuda(node.test)
                    and before
                    and before is not MISSING
                    and all(a == "cpu" for a in before)
                ):
                    # A CPU tensor moved only under `if x.is_cuda:` (`x.device.type == "cuda"`)
                    # stays on the CPU: the tensor tested is an XLA one, the move never runs.
                    # (A device chosen there is not dropped: `device = cpu; if x.is_cuda:
                    # device = x.get_device()` is how the code finds its device. Nor a move
                    # under `torch.cuda.is_available()`, whose tensor is often one of several
                    # a name holds: `targets.cuda()` of an inference default beside the
                    # batch's targets.)
                    in_body = before
                in_else = scope.env.get(name) if name in else_journal else before
                if else_dead:
                    in_else = before
                if _exits(node.orelse) and _host_narrowed(holds.get(name)):
                    in_else = None
                options = [v for v in (in_body, in_else) if v is not None and v is not MISSING]
                if not options:
                    scope.env.pop(name, None)
                elif len(options) == 1 or options[0] == options[1]:
                    scope.env[name] = options[0]
                else:
                    scope.env[name] = union(options[0], options[1])
            return
        if isinstance(node, ast.While):
            self.expression(node.test, scope)
            saved = scope.guards
            first_n = not self.query and self.first_n_block(node, scope)
            scope.guards = (
                *saved,
                _Test(node.test, False, scope.cls),
                *((RARE,) if first_n else ()),
            )
            self.block(node.body, scope, names, klass)
            scope.guards = saved
            self.block(node.orelse, scope, names, klass)
            return
        if isinstance(node, ast.Assert):
            self.expression(node.test, scope)
            # `assert isinstance(size, int)`: past the assert, `size` is a Python number
            # (`python -O`, which strips asserts, is not how training runs)
            holds, _ = self.narrowing(node.test, scope)
            for name, atoms in holds.items():
                if _host_narrowed(atoms):
                    set_local(scope, name, atoms)
            if node.msg is not None:
                saved = scope.guards
                scope.guards = (*saved, RARE)  # evaluated only when the assertion fails
                self.expression(node.msg, scope)
                scope.guards = saved
            return
        if isinstance(node, (ast.For, ast.AsyncFor)):
            self.expression(node.iter, scope)
            self.bind_loop(node.target, node.iter, scope)
            if self.snapshots is not None:
                self.snapshots[id(node.target)] = _snapshot(scope)
            self.block(node.body, scope, names, klass)
            self.block(node.orelse, scope, names, klass)
            return
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                self.expression(item.context_expr, scope)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, ["unknown"], scope)
                    if self.snapshots is not None:
                        self.snapshots[id(item.optional_vars)] = _snapshot(scope)
            self.block(node.body, scope, names, klass)
            return
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            self.block(node.body, scope, names, klass)  # type: ignore[attr-defined]
            for handler in node.handlers:  # type: ignore[attr-defined]
                if handler.name:
                    set_local(scope, handler.name, ["host"])
                # A handler runs when the block raised: the error path, not every step.
                saved_guards = scope.guards
                scope.guards = (*saved_guards, RARE)
                self.block(handler.body, scope, names, klass)
                scope.guards = saved_guards
            self.block(node.orelse, scope, names, klass)  # type: ignore[attr-defined]
            self.block(node.finalbody, scope, names, klass)  # type: ignore[attr-defined]
            return
        if type(node).__name__ == "Match":
            self.expression(node.subject, scope)  # type: ignore[attr-defined]
            for case in node.cases:  # type: ignore[attr-defined]
                self.block(case.body, scope, names, klass)
            return
        # Simple statements.
        if scope.info is not None and not self.query and self.collates.get(scope.info.key):
            self.built_keys(node, scope)
        elif scope.info is not None and not self.query and isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.slice, ast.Constant)
                    and isinstance(target.slice.value, str)
                ):
                    atoms = self.atoms(node.value, scope)
                    kind = "cpu" if atoms and all(a == "cpu" for a in atoms) else "tensor"
                    written = scope.info.written_keys
                    key = target.slice.value
                    written[key] = "cpu" if written.get(key, kind) == kind == "cpu" else "tensor"
        if isinstance(node, ast.Assign):
            lambda_function = self.lambda_functions.get(id(node)) if scope.info is None else None
            if lambda_function is not None:
                # `to_db = lambda x: 10 * np.log10(x)` at module level: a function of the
                # module, whose calls return what its body computes.
                self.function(_lambda_def(lambda_function), scope, names, None)
            self.expression(node.value, scope)
            value = self.atoms(node.value, scope)
            for target in node.targets:
                self.assign(target, node.value, value, scope, klass)
            return
        if isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.expression(node.value, scope)
                value = self.atoms(node.value, scope)
                if _self_target(node.target) and _class_name(node.annotation):
                    # `self.decoder: ActionDecoder = hydra.utils.instantiate(cfg)`: an
                    # instance of the annotated class (or of a subclass).
                    built = ast.copy_location(
                        ast.Call(func=node.annotation, args=[], keywords=[]), node.annotation
                    )
                    value = union(value, self.atoms(built, scope))
                self.assign(node.target, node.value, value, scope, klass)
            elif klass is not None and isinstance(node.target, ast.Name) and scope.info is None:
                kind = annotation_kind(ast.unparse(node.annotation))
                if kind is not None:
                    klass.attributes.setdefault(node.target.id, [kind])
            return
        if isinstance(node, ast.AugAssign):
            self.expression(node.value, scope)
            if isinstance(node.target, ast.Name):
                previous = scope.env.get(node.target.id, ["unknown"])
                set_local(scope, node.target.id, union(previous, self.atoms(node.value, scope)))
            else:
                key = entry_key(node.target)
                if key is not None and key[1] in scope.env:
                    # `state["step"] += 1`
                    previous = scope.env[key[1]]
                    set_local(scope, key[1], union(previous, self.atoms(node.value, scope)))
            return
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            self.expression(node.value, scope)
            grow_container(scope, node.value, self)
            self.register_buffer(node.value, scope)
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
                    returned = self.value(node.value, scope)
                    entries = dict_entries(node.value, scope, self)
                    if entries is not None:
                        returned = with_entries(returned, entries)
                    else:
                        fields = record_fields(node.value, scope, self)
                        if fields is not None:
                            # `return Output(loss=loss)`: a record whose fields are known
                            returned = [["s", [], ["host"], fields]]
                    if not (scope.cuda_only and all_host(returned)):
                        info.returns.append(returned)
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

    def tensor_alias(self, node: ast.expr, scope: Scope) -> bool:
        """An annotation naming torch's Tensor through an alias (`from torch import Tensor
        as T`, then `-> T` or `x: T`)."""
        text = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if text is None or text.split(".", 1)[0] not in scope.imports:
            return False
        qualified = self.qualify(text, scope.imports)
        return qualified.startswith("torch.") and qualified.endswith("Tensor")

    def annotation_text(self, node: ast.expr | None, scope: Scope) -> str | None:
        """A return annotation as written, or `torch.Tensor` for an alias of it."""
        if node is None:
            return None
        if self.tensor_alias(node, scope) and not _tensor_annotation(node):
            return "torch.Tensor"
        return ast.unparse(node)

    def function(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        outer: Scope,
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
            returns_annotation=self.annotation_text(node.returns, outer),
            span=(
                min([node.lineno, *(d.lineno for d in node.decorator_list)]),
                node.end_lineno or node.lineno,
            ),
        )
        info.abstract = _is_abstract(node, decorators)
        info.tensor_params = [
            a.arg
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
            if a.annotation is not None
            and (_tensor_annotation(a.annotation) or self.tensor_alias(a.annotation, outer))
        ]
        self.collates[info.key] = (
            is_collate_name(node.name, klass.name if klass is not None else None)
            or node.name in self.collate_names
            or (klass is not None and node.name in _ITEM_METHODS)
        )
        if klass is not None and node.name in _ITEM_METHODS and not self.query:
            self.item_strings[info.key] = string_names(node)
        info.none_params = sorted(_none_default_names(args))
        info.host_defaults = sorted(self._host_function_defaults(args, outer))
        info.device_returns = _returns_gpu_or_cpu_device(node)
        if not self.query:
            self._route_facts(info, node, params)
            info.trainer_returns = _trainer_returns(node)
        self.optional_params[info.key] = _none_default_names(args) | (
            self.optional_params.get(outer.info.key, set()) if outer.info is not None else set()
        )
        asserted = _asserted_none(node.body, self.optional_params[info.key])
        if klass is not None:
            for test_node, branch in _unpassed_flag_branches(node):
                self.dead_branches.setdefault(id(test_node), branch)
        if asserted:
            self.asserted_none[info.key] = asserted
        self.summary.functions.append(info)
        self.node_keys[id(node)] = info.key
        info.rank_aware = self._spans_rank_line(node)
        info.dist_rank = self._spans(self.dist_rank_lines, node)
        info.rank_source = self._spans(self.rank_source_lines, node)
        if not self.query and self._mentions_index_use(node):
            info.index_uses = index_uses(node.body)
        if klass is not None:
            klass.methods.setdefault(node.name, info.key)
        scope = Scope(
            info,
            dict(outer.imports),
            cls=klass if klass is not None else outer.cls,
            record_calls=outer.record_calls and not is_cold_name(node.name),
        )
        if outer.info is not None:
            # A closure sees the enclosing function's locals.
            scope.env = dict(outer.env)
            scope.instances = dict(outer.instances)
            scope.attr_aliases = dict(outer.attr_aliases)
            scope.keyed = set(outer.keyed)
        annotated = [a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        for index, name in enumerate(params):
            # `core_model: nn.Module`, `n: int`: the annotation says what the parameter is
            # (a module moved with `.cpu()` is an offload, not a read of a tensor).
            # In query mode every parameter stays symbolic: the rules' resolver reads its
            # annotation with the hotness of the function (value_query).
            kind = (
                annotation_kind(ast.unparse(annotated[index]))
                if annotated[index] and not self.query
                else None
            )
            param: Atom = ["p", index, self.depth] if self.query else ["p", index]
            if kind is None and _first_use(self.size_uses, name, node):
                # `x.reshape(n, c, rows, cols)` in the body: `rows` is a Python int, whatever
                # the parameter's name or the function's role presume.
                kind = "number"
            elif kind is None and _first_use(self.numpy_uses, name, node):
                kind = "numpy"  # `values.astype(np.float32)`: tensors have no `astype`
            scope.env[name] = scope.params[name] = [kind] if kind is not None else [param]
            if kind is None and name == "batch" and klass is not None and "step" in node.name:
                # the batch a step method gets (`training_step`, `shared_step`): what the
                # loader's collate built (inference.step_batch)
                scope.env[STEP_BATCH] = [param]
            scope.instances.pop(name, None)
            scope.attr_aliases.pop(name, None)
            scope.param_classes.pop(name, None)
            annotated_class = _annotated_class(annotated[index]) if kind is None else None
            if annotated_class is not None:
                scope.param_classes[name] = annotated_class
        if klass is not None and params and "classmethod" in decorators:
            # `cls(data)` in a classmethod (`of_shape(cls, ...)`): an instance of the class
            scope.class_refs[params[0]] = ["." + klass.qualname]
        scope.str_keyed = frozenset(
            name
            for name, annotation in zip(params, annotated, strict=False)
            if annotation is not None and _STR_KEYED.match(ast.unparse(annotation))
        )
        if args.vararg is not None:
            vararg: list[Atom] = ["unknown"] if self.query else ["host"]
            if not self.query and not args.kwonlyargs:
                # `def unify(*waves)`: the values the calls pass after the named parameters
                # (read as the first of them: `unify(a, b)` passes tensors or numbers alike).
                vararg = [["p", len(params)]]
            scope.env[args.vararg.arg] = vararg
        if args.kwarg is not None:
            scope.env[args.kwarg.arg] = ["host"]
            # the values of `**kwargs`: parameter index len(params) + 1 (`*args` is at
            # len(params)), resolved from the keywords the calls pass beyond the named ones
            index = len(params) + 1
            spread: Atom = ["p", index, self.depth] if self.query else ["p", index]
            scope.kwargs = (args.kwarg.arg, scope.env[args.kwarg.arg], spread)
            info.kwargs = True
        if self.snapshots is not None:
            self.snapshots[id(args)] = _snapshot(scope)
        self.depth += 1
        self.function_bodies.add(id(node.body))
        self.block(node.body, scope, [*names, node.name], None)
        self.depth -= 1

    def built_keys(self, node: ast.stmt, scope: Scope) -> None:
        """What a collate function builds at the string keys of its batch dicts: a dict
        display it returns, binds or merges (`batch.update({...})`), and `batch["k"] = v`."""
        entries: list[tuple[str, ast.expr]] = []
        displays: list[ast.expr] = []
        if isinstance(node, (ast.Return, ast.Assign)) and node.value is not None:
            displays.append(node.value)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value
            if isinstance(call.func, ast.Attribute) and call.func.attr == "update":
                displays.extend(call.args[:1])
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Yield) and node.value.value:
            displays.append(node.value.value)  # `yield {...}` of an IterableDataset
        for display in displays:
            if isinstance(display, ast.Dict):
                for key, value in zip(display.keys, display.values, strict=True):
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        entries.append((key.value, value))
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.slice, ast.Constant)
                    and isinstance(target.slice.value, str)
                ):
                    entries.append((target.slice.value, node.value))
        item = scope.info.name in _ITEM_METHODS
        if isinstance(node, ast.Return) and node.value is not None:
            entries.extend(self._built_positions(node.value, scope, item))
        built = scope.info.built_keys
        # A dataset's items may reach a step through torch's default_collate, which stacks
        # numbers into tensors: what an item holds at a key says nothing of the batch's.
        # A string stays one (a list of them after default_collate, and no collate function
        # makes a tensor of text), which Lightning's batch transfer leaves on the host.
        strings = self.item_strings.get(scope.info.key, frozenset())
        for key, value in entries:
            node_value = value if isinstance(value, ast.expr) else None
            atoms = self.atoms(node_value, scope) if node_value is not None else value
            if item:
                scope.info.item_keys[key] = merge_built_kinds(
                    scope.info.item_keys.get(key, "number"),
                    _built_kind(atoms, node_value, strings),
                )
            string = node_value is not None and is_string(node_value, strings)
            kind = (
                ("host" if string else "tensor")
                if item
                else "number"
                if atoms and all(a == "number" for a in atoms)
                else "host"
                if all_host(atoms)
                else "tensor"
            )
            if (
                kind == "tensor"
                and not item
                and atoms
                and all(isinstance(a, list) and a[0] == "s" for a in atoms)
                and host_lists_returned(scope.info.returns_annotation)
            ):
                # `"who": [s["who"] for s in items]` in a collate function annotated to
                # return `Dict[str, Union[Tensor, List[str], List[int]]]`: a list entry is
                # one of the lists the annotation names, all of Python values.
                kind = "host"
            if kind == "tensor" and not item:
                # `"lengths": [len(s) for s in items]`, `"n": [x["n"] for x in items]`: a
                # list of Python values (of the items' entries), which Lightning's batch
                # transfer leaves on the host
                kind = listed_kind(atoms) or kind
            built[key] = merge_built_kinds(built.get(key, kind), kind)

    def _built_positions(
        self, value: ast.expr, scope: Scope, item: bool
    ) -> list[tuple[str, ast.expr | list[Atom]]]:
        """The positions of a tuple a collate function (or a dataset's item method) returns,
        as batch keys "#i/N" (element i of an N-tuple, what `a, b, c = batch` in a step
        unpacks) and "#i" (`batch[i]`), each with its element's expression (or atoms when the
        tuple was bound to a name first). A collate function's return of anything else that
        is no dict (`return default_collate(items)`) gives "#?": the positions of its batches
        are not known, and no position of any batch is (ProjectModel.batch_key_kind)."""
        elements: list[ast.expr | list[Atom]] | None = None
        if isinstance(value, ast.Tuple):
            if any(isinstance(e, ast.Starred) for e in value.elts):
                return [] if item else [("#?", ["unknown"])]
            elements = list(value.elts)
        else:
            atoms = self.atoms(value, scope)
            if len(atoms) == 1 and isinstance(atoms[0], list) and atoms[0][0] == "t":
                elements = [list(e) for e in atoms[0][1:]]
            elif item or (isinstance(value, ast.Constant) and value.value is None):
                return []
            elif atoms and all(isinstance(a, list) and a[0] == "s" for a in atoms):
                return []  # a dict (or list) of the batch: its keys say what it holds
            else:
                return [("#?", ["unknown"])]
        count = len(elements)
        out: list[tuple[str, ast.expr | list[Atom]]] = []
        for index, element in enumerate(elements):
            out.append((f"#{index}/{count}", element))
            out.append((f"#{index}", element))
        return out

    def _mentions_index_use(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        lines = self.index_use_lines
        first = bisect.bisect_left(lines, node.lineno)
        return first < len(lines) and lines[first] <= (node.end_lineno or node.lineno)

    def klass(self, node: ast.ClassDef, outer: Scope, names: list[str]) -> None:
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
        info.decorators = [
            dotted(d.func if isinstance(d, ast.Call) else d) or "?" for d in node.decorator_list
        ]
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                text = ast.unparse(item.annotation)
                declared = annotation_kind(text)
                info.fields[item.target.id] = (
                    declared
                    if declared in ("number", "host")
                    else ("tensor" if "Tensor" in text else "other")
                )
        self.node_keys[id(node)] = qualname
        info.rank_aware = self._spans_rank_line(node)
        info.dist_rank = self._spans(self.dist_rank_lines, node)
        info.rank_source = self._spans(self.rank_source_lines, node)
        self.summary.classes.append(info)
        self.class_methods[qualname] = {
            item.name: item
            for item in node.body
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        body_scope = Scope(None, dict(outer.imports), cls=info)
        self.block(node.body, body_scope, [*names, node.name], info)

    # --- names -------------------------------------------------------------------------

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

    def condition(self, test: Any) -> frozenset[str]:
        """The guard kinds of a condition: an expression, or a `_Test` (read where it fails,
        or with the class whose boolean methods it may call)."""
        if isinstance(test, _Test):
            expr, negated, cls, device = test
        else:
            expr, negated, cls, device = test, False, None, True
        key = (id(expr), negated, cls.qualname if cls is not None else None, device)
        kinds = self._conditions.get(key)
        if kinds is None:
            methods = self.class_methods.get(cls.qualname, {}) if cls is not None else {}

            def predicate(name: str) -> str | None:
                method = methods.get(name)
                returned = _single_return(method) if method is not None else None
                return self.segment(returned) if returned is not None else None

            kinds = condition_kinds(self.segment(expr), negated, predicate, device)
            self._conditions[key] = kinds
        return kinds

    def _preceding(self, node: ast.stmt) -> list[ast.stmt]:
        """The statements before `node` in its block (the one being walked)."""
        statements, index = self._before
        if index < len(statements) and statements[index] is node:
            return statements[:index]
        return []

    def first_n_counters(
        self, test: ast.expr, holds: bool, before: list[ast.stmt]
    ) -> tuple[str, ...]:
        """The deferred first-N guards of a test (guards.first_n_counters), for the code
        that runs where it holds or fails; the counter may be a local alias bound by the
        statements `before` it in its block."""
        if not isinstance(test, (ast.Compare, ast.BoolOp)):
            return ()
        text = self.segment(test)
        if "<" not in text and ">" not in text:
            return ()
        return first_n_guards(first_n_counters(text, holds, counter_aliases(before)))

    def first_n_block(self, node: ast.If | ast.While, scope: Scope) -> bool:
        """`if len(self.examples) < self.max_examples:` / `while self.n_logged < N:` whose
        body (or a method of the class it calls) grows that container or counter: it runs
        for the first N batches only; `if self.embs.shape[0] > limit:` whose body empties
        `self.embs`: once every `limit` samples (accumulate, then flush); `if now -
        self.last >= self.interval:` whose body moves `self.last`: once per interval."""
        if not isinstance(node.test, (ast.Compare, ast.BoolOp)):
            return False
        test = self.segment(node.test)
        targets, flushed = first_n_targets(test), flush_targets(test)
        markers = marker_targets(test)
        changes = change_targets(test)
        if not targets and not flushed and not markers and not changes:
            return False
        texts = [self.segment(statement) for statement in node.body]  # type: ignore[arg-type]
        methods = self.class_methods.get(scope.cls.qualname, {}) if scope.cls else {}
        for call in ast_walk(ast.Module(body=node.body, type_ignores=[])):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id == "self"
                and call.func.attr in methods
            ):
                texts.extend(self.segment(s) for s in methods[call.func.attr].body)  # type: ignore[arg-type]
        return (
            any(grows(text, target) for text in texts for target in targets)
            # `while self.n < N:` whose body sets `self.n`: the loop ends with the test
            # false and the attribute persists, so later steps skip it until N changes.
            or (
                isinstance(node, ast.While)
                and any(resets(text, target) for text in texts for target in targets)
            )
            or any(flushes(text, target) for text in texts for target in flushed)
            or any(resets(text, target) for text in texts for target in markers)
            or any(records(text, *change) for text in texts for change in changes)
        )

    def resolve_guards(self, pending: tuple[Any, ...]) -> tuple[str, ...]:
        kinds: set[str] = set()
        for item in pending:
            if isinstance(item, _Cond):
                continue  # a test of a parameter: read by the project model's routes
            kinds |= {item} if isinstance(item, str) else self.condition(item)
        return tuple(sorted(kinds))

    def _host_function_defaults(self, args: ast.arguments, scope: Scope) -> set[str]:
        """The parameters whose default names a function of a host package (numpy, scipy,
        sklearn: `metric=mean_absolute_error`): calling it gives host data."""
        pairs = defaulted_params(args)
        found: set[str] = set()
        for arg, default in pairs:
            text = dotted(default) if isinstance(default, (ast.Name, ast.Attribute)) else None
            if text is None or text.split(".", 1)[0] not in scope.imports:
                continue
            qualified = self.qualify(text, scope.imports)
            if "." in qualified and qualified.split(".", 1)[0] in HOST_PACKAGES:
                found.add(arg.arg)
        return found

    def _never_runs(self, body: list[ast.stmt]) -> bool:
        """Whether a branch's first statement starts where `never_run` says (1-based
        character columns, as the scope facts record them)."""
        if not body or not self.never_run:
            return False
        first = body[0]
        lines = self.__dict__.get("_lines")
        if lines is None:
            lines = self.__dict__["_lines"] = self.text.splitlines()
        column = first.col_offset
        if 0 < first.lineno <= len(lines) and not lines[first.lineno - 1].isascii():
            raw = lines[first.lineno - 1].encode("utf-8")
            column = len(raw[:column].decode("utf-8", errors="replace"))
        return (first.lineno, column + 1) in self.never_run

    def initialises_once(self, test: ast.expr, rest: list[ast.stmt], scope: Scope) -> bool:
        """`if self.initialized: return` followed by code that sets `self.initialized` (or
        a method of the class it calls sets it) on every path: that code runs once."""
        if not isinstance(test, (ast.Attribute, ast.Call, ast.Compare)):
            return False
        attribute = done_attribute(self.segment(test))
        if attribute is None:
            return False
        return self._runs_once(rest, [(attribute, False)], scope)

    def lazy_block(self, node: ast.If, scope: Scope) -> bool:
        """`if not self.built: ...; self.built = True` (or `if self.cache is None:` that sets
        the cache, `if self._first: ...; self._first = False`): the body runs once. The
        attribute may be set by a method of the class the body calls (`if not
        self.initialized: self._init_from_batch(x)`, which sets it)."""
        if not _may_be_lazy_test(node.test):
            return False
        flags = once_flags(self.segment(node.test))
        return bool(flags) and self._runs_once(node.body, flags, scope)

    def _runs_once(self, body: list[ast.stmt], flags: list[tuple[str, bool]], scope: Scope) -> bool:
        """Whether the statements end their run-once guard on every path (one of `flags`:
        set to a value that makes the test fail, themselves or through a method of the
        class they call), and no other method of the class (`__init__` aside) arms it again
        (`self._initialized = False` in a step: the block runs every step)."""
        methods = self.class_methods.get(scope.cls.qualname, {}) if scope.cls else {}
        inside = {id(n) for statement in body for n in ast_walk(statement)}
        return any(
            always_sets_flag(body, attribute, clears, methods)
            and not rearmed_elsewhere(methods, attribute, clears, inside)
            for attribute, clears in flags
        )

    # --- expressions: calls --------------------------------------------------------------

    def expression(self, node: ast.expr, scope: Scope) -> None:
        """Record the calls in an expression (lambdas included, comprehensions included), with
        the guards of `a and b` / `x if c else y` inside it."""
        if scope.info is None and not self.query:
            self.top_call(node, scope)
        if scope.info is None or not scope.record_calls or self.query:
            return
        start = (*scope.guards, RARE) if scope.error_path else scope.guards
        # Each node with the scope its names are read in: inside a comprehension, one in
        # which its generators' targets are bound like a for loop's (`[f(p, t) for p, t in
        # zip(preds, targets)]` passes the elements of `preds` and `targets`).
        stack: list[tuple[ast.AST, tuple[Any, ...], Scope]] = [(node, start, scope)]
        while stack:
            current, guards, names = stack.pop()
            if isinstance(current, _COMPREHENSIONS) and current.generators:
                names = self.bind_comprehension(current, names)
            if isinstance(current, ast.Call):
                self.record_placement(current, scope)
                mapped = _mapped_call(current)
                if mapped is not None:
                    # `executor.map(self._item, rows, masks)`: a call of `_item` per element.
                    stack.append((mapped, guards, names))
                calls = [self.call_site(current, scope, guards)]
                if isinstance(current.func, ast.Name) and current.func.id in scope.method_refs:
                    # `step = self.model.forward_old if old else self.model.forward;
                    # step(x)`: a call of each method the local may hold.
                    resolved = self.resolve_guards(guards) if guards else ()
                    calls = [
                        CallSite(form, target, current.lineno, resolved)
                        for form, target in scope.method_refs[current.func.id]
                    ]
                for call in calls:
                    if call is None:
                        continue
                    if call.form != "name" or call.target.split(".", 1)[0] not in _EXTERNAL:
                        # What the call passes: the callee's parameters' values, for the
                        # model (a helper only ever called with CPU tensors or numpy).
                        call.args = [
                            self.atoms(a, names)
                            for a in current.args
                            if not isinstance(a, ast.Starred)
                        ]
                        call.keywords = {
                            k.arg: self.atoms(k.value, names)
                            for k in current.keywords
                            if k.arg is not None
                        }
                        # What `*args` / `**kwargs` spread is not visible: marked by keys no
                        # parameter has, so no call that spreads seems to leave one out.
                        if any(isinstance(a, ast.Starred) for a in current.args):
                            call.keywords["*"] = []
                        spreads = [k.value for k in current.keywords if k.arg is None]
                        if spreads:
                            # one mapping spread (`**self.step_kwargs`): what it holds, for
                            # the parameters it may fill; several: not followed
                            call.keywords["**"] = (
                                self.atoms(spreads[0], names) if len(spreads) == 1 else []
                            )
                        call.arg_texts = [
                            value_texts(a) for a in current.args if not isinstance(a, ast.Starred)
                        ]
                        call.keyword_texts = {
                            k.arg: texts
                            for k in current.keywords
                            if k.arg is not None and (texts := value_texts(k.value))
                        }
                        self._record_none_args(call, current, scope)
                        self._record_route_args(call, current, guards, scope)
                    scope.info.calls.append(call)
            if isinstance(current, ast.BoolOp):
                # `a and b`: `b` runs where `a` holds; `a or b`: where `a` fails
                extra = guards
                fails = isinstance(current.op, ast.Or)
                for value in current.values:
                    stack.append((value, extra, names))
                    extra = (*extra, _Test(value, fails, scope.cls, device=not fails))
                continue
            if isinstance(current, ast.IfExp):
                stack.append((current.test, guards, names))
                stack.append(
                    (current.body, (*guards, _Test(current.test, False, scope.cls)), names)
                )
                stack.append(
                    (
                        current.orelse,
                        (*guards, _Test(current.test, True, scope.cls, device=False)),
                        names,
                    )
                )
                continue
            for name in _child_fields(type(current)):
                child = getattr(current, name)
                if type(child) is list:
                    for item in child:
                        if isinstance(item, ast.AST):
                            stack.append((item, guards, names))
                elif isinstance(child, ast.AST):
                    stack.append((child, guards, names))

    def top_call(self, node: ast.expr, scope: Scope) -> None:
        """`train(args, model, loader)` or `fit(net, data, DEVICE)` at the module's top level
        (a `__main__` block): the devices its arguments may name, settled at the end."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            return
        if node.func.id in scope.imports or any(isinstance(a, ast.Starred) for a in node.args):
            return
        record: list[Any] = [node.func.id, [], {}]
        for index, arg in enumerate(node.args):
            record[1].append(self._top_argument(arg, scope, record, index))
        for keyword in node.keywords:
            if keyword.arg is not None:
                record[2][keyword.arg] = self._top_argument(
                    keyword.value, scope, record, keyword.arg
                )
        self.summary.top_calls.append(record)

    def _top_argument(self, arg: ast.expr, scope: Scope, record: list[Any], slot: Any) -> Any:
        if isinstance(arg, ast.Name):
            self.pending_top.append((record, slot, "global", arg.id))
            return ["unknown"]
        if isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name):
            self.pending_top.append((record, slot, "namespace", arg.attr))
            return ["unknown"]
        return self.device_atoms(arg, scope, 0)

    def record_placement(self, node: ast.Call, scope: Scope) -> None:
        placement = self.placement(node, scope)
        if placement is None:
            return
        info = scope.info
        if isinstance(placement, tuple):
            # settled when the module's globals and namespace stores are all seen
            info.placements.append(["unknown"])
            self.pending_placements.append((info, len(info.placements) - 1, *placement))
        elif placement not in info.placements:
            info.placements.append(placement)

    def placement(self, node: ast.Call, scope: Scope) -> list[Atom] | tuple[str, str] | None:
        """The device a call puts tensors or modules on, as atoms: `.cuda()` the marker
        "cuda", a CUDA or MPS literal too, `.to(d)` / `device=d` the atoms of `d` ("cpu_device"
        for the CPU or a CUDA/MPS chain ending in it). None for a call that places nothing
        (`.to(torch.float16)`, `.to(other_tensor)`)."""
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "cuda":
            return ["cuda"]
        argument = next((k.value for k in node.keywords if k.arg == "device"), None)
        if argument is None and isinstance(func, ast.Attribute) and func.attr == "to":
            argument = node.args[0] if node.args else None
        if argument is None:
            return None
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            name = argument.value.split(":", 1)[0]
            if name in ("cuda", "mps"):
                return ["cuda"]
        text = dotted(argument)
        if text is not None and self.qualify(text, scope.imports).startswith("torch."):
            return None  # a dtype (`torch.float16`)
        if isinstance(argument, ast.Name):
            if argument.id not in scope.env:
                return ("global", argument.id)
            held = scope.env[argument.id]
            if held and all(a in ("device", "cpu", "mask") for a in held):
                return None  # `.to(other_tensor)`: with that tensor, placed elsewhere
        if isinstance(argument, ast.Attribute) and isinstance(argument.value, ast.Name):
            if argument.value.id == "self":
                return [["a", argument.attr]]  # what the class stores, settled by the model
            if argument.value.id not in scope.imports:
                return ("namespace", argument.attr)
        return self.device_atoms(argument, scope, 0)

    def call_site(self, node: ast.Call, scope: Scope, pending: tuple[Any, ...]) -> CallSite | None:
        func = node.func
        line = node.lineno
        guards = self.resolve_guards(pending) if pending else ()
        if isinstance(func, ast.Attribute):
            value = func.value
            if isinstance(value, ast.Name) and value.id == "self":
                return CallSite("self", func.attr, line, guards)
            if is_super_call(value):
                return CallSite("super", func.attr, line, guards)
            if (
                isinstance(value, ast.Attribute)
                and isinstance(value.value, ast.Name)
                and value.value.id == "self"
            ):
                return CallSite("attr", f"{value.attr}.{func.attr}", line, guards)
            if (
                isinstance(value, ast.Attribute)
                and isinstance(value.value, ast.Attribute)
                and isinstance(value.value.value, ast.Name)
                and value.value.value.id == "self"
            ):
                # `self.metrics.buffer.append(...)`: a method of what an attribute of an
                # attribute holds (ProjectModel.resolve_call follows both)
                target = f"{value.value.attr}.{value.attr}.{func.attr}"
                return CallSite("attr", target, line, guards)
            if isinstance(value, ast.Name) and value.id in scope.instances:
                return CallSite("inst", f"{scope.instances[value.id]}.{func.attr}", line, guards)
            if isinstance(value, ast.Name) and value.id in scope.attr_aliases:
                target = f"{scope.attr_aliases[value.id]}.{func.attr}"
                return CallSite("attr", target, line, guards)
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

    def register_buffer(self, call: ast.Call, scope: Scope) -> None:
        """`self.register_buffer("queue_ptr", torch.zeros(1))`: the attribute `queue_ptr` holds
        the tensor, moved with the module to its device (`.to(device)` moves buffers)."""
        func = call.func
        if (
            scope.cls is None
            or scope.info is None
            or not isinstance(func, ast.Attribute)
            or func.attr != "register_buffer"
            or dotted(func.value) != "self"
            or len(call.args) < 2
            or not isinstance(call.args[0], ast.Constant)
            or not isinstance(call.args[0].value, str)
        ):
            return
        name = call.args[0].value
        atoms: list[Atom] = [["mv", "device", self.atoms(call.args[1], scope)]]
        existing = scope.cls.attributes.get(name)
        scope.cls.attributes[name] = atoms if existing is None else union(existing, atoms)

    def assign(
        self,
        target: ast.expr,
        value_node: ast.expr,
        value: list[Atom],
        scope: Scope,
        klass: ClassSummary | None,
    ) -> None:
        if (
            isinstance(scope.info, FunctionSummary)
            and scope.cls is not None
            and isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and target.value.id in scope.info.params[1:]
            and isinstance(target.slice, ast.Attribute)
            and isinstance(target.slice.value, ast.Name)
            and target.slice.value.id == "self"
        ):
            # `batch_dict[self._key_out] = output`: what a keyed pipeline's module writes
            writes = scope.info.keyed_writes
            held = writes.get(target.slice.attr)
            writes[target.slice.attr] = value if held is None else union(held, value)
        entry = self_entry(target, scope) if scope.cls is not None else None
        if entry is not None and scope.cls is not None:
            # `self.state["k"] = v`, `self.state[p]["step"] = v` (also through a local
            # `state = self.state[p]`): what that entry of the dict attribute holds, recorded
            # under the made-up attribute name `state['k']` / `state[]['step']` (`state[]`:
            # whole entries `self.state[p] = v`).
            existing = scope.cls.attributes.get(entry)
            scope.cls.attributes[entry] = value if existing is None else union(existing, value)
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id not in ("self", *scope.imports)
            and not self.query
        ):
            # `args.device = torch.device(...)`: what `x.to(args.device)` places on
            stored = ["cpu_device"] if device_literal(value_node) == "cpu" else value
            existing = self.namespace_stores.get(target.attr)
            self.namespace_stores[target.attr] = (
                stored if existing is None else union(existing, stored)
            )
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
            atoms = self._attribute_atoms(value_node, _stored_params(value, scope))
            held = self._copied(value_node, scope)
            annotation = scope.param_classes.get(held.id) if isinstance(held, ast.Name) else None
            if annotation is not None and any(a[:1] == ["p"] for a in value if isinstance(a, list)):
                # `self.decoder = decoder` of a parameter `decoder: Decoder`: an instance of
                # the annotated class (or of a subclass), whoever builds it.
                built = ast.copy_location(
                    ast.Call(func=annotation, args=[], keywords=[]), annotation
                )
                atoms = union(atoms, self.atoms(built, scope))
            scope.cls.attributes[target.attr] = (
                atoms if existing is None else union(existing, atoms)
            )
            return
        if klass is not None and scope.info is None and isinstance(target, ast.Name):
            # A class-level assignment: a default for `self.<name>`.
            klass.attributes.setdefault(target.id, self._attribute_atoms(value_node, value))
            return
        if scope.info is None and klass is None and isinstance(target, ast.Name):
            # A module global (`DEVICE = torch.device(...)`): what `x.to(DEVICE)` places on.
            stored = ["cpu_device"] if device_literal(value_node) == "cpu" else value
            existing = self.module_globals.get(target.id)
            self.module_globals[target.id] = stored if existing is None else union(existing, stored)
        if scope.info is None and not (self.query and klass is None):
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
        display = dict_display(value_node, scope)
        if isinstance(target, ast.Name) and isinstance(display, ast.Dict):
            # `preds = {"masks": [], "logits": []}` (or `dict(masks=[], logits=[])`): its
            # string keys hold what they were built from (`preds["masks"].append(m)` grows
            # that entry)
            for key, entry in zip(display.keys, display.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    set_local(scope, f"{target.id}[{key.value!r}]", self.atoms(entry, scope))
                    scope.keyed.add(target.id)
        if isinstance(target, ast.Name):
            refs = _method_refs(value_node)
            if refs:
                scope.method_refs[target.id] = refs
            else:
                scope.method_refs.pop(target.id, None)
            ctor = self.constructor(value_node, scope)
            if ctor is not None:
                scope.instances[target.id] = ctor
            else:
                scope.instances.pop(target.id, None)
            alias = self._self_attribute_alias(value_node, scope)
            if alias is not None:
                scope.attr_aliases[target.id] = alias
            else:
                scope.attr_aliases.pop(target.id, None)
            cls_ref = self.class_reference(value_node, scope)
            if cls_ref is None:
                scope.class_refs.pop(target.id, None)
            elif cls_ref not in scope.class_refs.setdefault(target.id, []):
                # Each branch's class: `if a: cls = A` / `else: cls = B`, then `cls(...)`.
                scope.class_refs[target.id].append(cls_ref)

    def _self_attribute_alias(self, node: ast.expr, scope: Scope) -> str | None:
        """The attribute of `self` a value is: `self.orch`, or a call with no arguments of a
        method of the class whose every `return` gives the same `self.orch` (a getter that
        checks it is set: `if self.orch is None: raise ...` / `return self.orch`)."""
        name = self_attribute_name(node)
        if name is not None:
            return name
        if not (
            isinstance(node, ast.Call)
            and not node.args
            and not node.keywords
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "self"
            and scope.cls is not None
        ):
            return None
        method = self.class_methods.get(scope.cls.qualname, {}).get(node.func.attr)
        if method is None or method.decorator_list:
            return None
        returned = {
            self_attribute_name(sub.value) if sub.value is not None else None
            for sub in _own_returns(method)
        }
        if len(returned) != 1:
            return None
        return next(iter(returned))

    def _copied(self, node: ast.expr, scope: Scope) -> ast.expr:
        """The value a copy copies (`deepcopy(graph_builder)`, `copy.copy(x)`): an instance
        of the same class; else the node itself."""
        if (
            isinstance(node, ast.Call)
            and len(node.args) == 1
            and not node.keywords
            and (text := dotted(node.func)) is not None
            and self.qualify(text, scope.imports) in COPY_FUNCTIONS
        ):
            return node.args[0]
        return node

    def _attribute_atoms(self, value_node: ast.expr, value: list[Atom]) -> list[Atom]:
        # Parameters of the method that sets the attribute mean nothing to other methods.
        return [a for a in value if not (isinstance(a, list) and a[0] == "p")] or ["unknown"]

    def class_reference(self, node: ast.expr, scope: Scope) -> str | None:
        """The qualified class a bare class name refers to (`CTMCField`, `fields.CTMCField`:
        capitalised, imported or of this module), else None."""
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return None
        text = dotted(node)
        if text is None or not text.rsplit(".", 1)[-1][:1].isupper():
            return None
        root = text.split(".", 1)[0]
        if root not in scope.imports and root not in self.module_names:
            return None
        return self.qualify(text, scope.imports)

    def constructor(self, node: ast.expr, scope: Scope) -> str | None:
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


# Fields of ast nodes that hold child nodes (not names, operators or load/store contexts).
_NOT_CHILDREN = frozenset({"ctx", "op", "ops", "type_comment", "kind", "is_async", "level"})
_FIELDS: dict[type, tuple[str, ...]] = {}


def host_lists_returned(annotation: str | None) -> bool:
    """Whether a function's return annotation is a dict whose values, where they are lists,
    are lists of Python values: `Dict[str, Union[torch.Tensor, List[str], List[int]]]`,
    `dict[str, Tensor | list[str]]` (some list member, and every list member one of host
    values; a bare `list` or `Any` says nothing)."""
    if annotation is None:
        return False
    text = annotation.replace(" ", "")
    for head in ("Dict[", "dict[", "typing.Dict[", "Mapping[", "typing.Mapping["):
        if text.startswith(head) and text.endswith("]"):
            inner = text[len(head) : -1]
            break
    else:
        return False
    if not inner.startswith(("str,", "'str',")):
        return False
    inner = inner.split(",", 1)[1]
    for wrapper in ("Union[", "typing.Union["):
        if inner.startswith(wrapper) and inner.endswith("]"):
            inner = inner[len(wrapper) : -1].replace(",", "|")
    members, depth, current = [], 0, ""
    for char in inner:
        depth += char == "["
        depth -= char == "]"
        if char == "|" and depth == 0:
            members.append(current)
            current = ""
        else:
            current += char
    members.append(current)
    if any(m.rsplit(".", 1)[-1] in ("Any", "list", "List", "object") for m in members):
        return False
    lists = [
        m for m in members if m.split("[", 1)[0].rsplit(".", 1)[-1] in ("List", "list", "Sequence")
    ]
    return bool(lists) and all(annotation_kind(m) == "host" for m in lists)


def merge_built_kinds(before: str, kind: str) -> str:
    """What a batch key holds when two places build it ("number", "host" or "tensor", or
    "items:KEY", a list of the items' entries at KEY): a tensor wins, two numbers stay a
    number, two lists of the same entries stay one, anything else on the host is host data."""
    if "tensor" in (before, kind):
        return "tensor"
    if before.startswith("items:") or kind.startswith("items:"):
        return before if before == kind else "tensor"  # resolved one at a time: keep it safe
    return "number" if before == kind == "number" else "host"


def _built_kind(atoms: list[Atom], value: ast.expr | None, strings: frozenset[str]) -> str:
    """What an item method builds at a key, as built: "number", "host" or "tensor"."""
    if atoms and all(a == "number" for a in atoms):
        return "number"
    if all_host(atoms) or (value is not None and is_string(value, strings)):
        return "host"
    return "tensor"


def listed_kind(atoms: list[Atom]) -> str | None:
    """ "host" for a list (or other container) of Python values only (`[len(s) for s in
    items]`); "items:KEY" for a list of the collated items' entries at one string key
    (`[x["n"] for x in items]`: Python values when the dataset's items hold numbers there);
    else None."""
    if not atoms or not all(isinstance(a, list) and a[0] == "s" and len(a) == 2 for a in atoms):
        return None
    elements = [e for a in atoms for e in a[1]]
    if elements and all(e in ("number", "host") for e in elements):
        return "host"
    keys = {e[1] for e in elements if isinstance(e, list) and e[0] == "k"}
    if (
        len(keys) == 1
        and not next(iter(keys)).startswith("@")
        and all(e in ("number", "host") or (isinstance(e, list) and e[0] == "k") for e in elements)
    ):
        return "items:" + next(iter(keys))
    return None


# A dataset's item methods: the dicts they build are a batch's keys after default_collate.
_ITEM_METHODS = frozenset({"__getitem__", "__iter__", "__getitems__"})


def string_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """The local names of a function that hold strings: some assignment binds a string
    (is_string), or the code uses the name as one (`os.path.join(root, name)`,
    `name.split(" ")`, `name.endswith(".wav")`), and every other binding leaves the type open
    (an unpacked tuple, a loop variable, an element or attribute of something, another name);
    a name also bound to anything else (a call, a number, a container) is not one."""
    bound: dict[str, list[ast.expr | None]] = {}
    used: set[str] = set()

    def unpacked(target: ast.expr) -> None:
        for sub in ast_walk(target):
            if isinstance(sub, ast.Name):
                bound.setdefault(sub.id, []).append(None)

    for sub in ast_walk(node):
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and sub is not node:
            continue
        if isinstance(sub, ast.Assign):
            for target in sub.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(sub.value)
                else:
                    unpacked(target)
        elif isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name):
            bound.setdefault(sub.target.id, []).append(sub.value)
        elif isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
            bound.setdefault(sub.target.id, []).append(
                ast.BinOp(ast.Name(sub.target.id), sub.op, sub.value)
            )
        elif isinstance(sub, (ast.For, ast.AsyncFor, ast.comprehension)):
            unpacked(sub.target)
        elif isinstance(sub, ast.Call):
            name = dotted(sub.func) or ""
            if name.startswith(("os.path.", "osp.")):
                used.update(a.id for a in sub.args if isinstance(a, ast.Name))
            elif isinstance(sub.func, ast.Attribute) and isinstance(sub.func.value, ast.Name):
                attr = sub.func.attr
                texts = [a for a in sub.args if isinstance(a, ast.Constant)]
                if attr in STRING_USE_METHODS or (
                    attr in ("split", "rsplit", "replace")
                    and texts
                    and all(isinstance(a.value, str) for a in texts)
                    and len(texts) == len(sub.args)
                ):
                    used.add(sub.func.value.id)
    strings: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, values in bound.items():
            if name in strings:
                continue
            known = frozenset(strings)
            if (name in used or any(v is not None and is_string(v, known) for v in values)) and all(
                v is None
                or is_string(v, known)
                or isinstance(v, (ast.Subscript, ast.Attribute, ast.Name))
                or (isinstance(v, ast.BinOp) and isinstance(v.left, ast.Name) and v.left.id == name)
                for v in values
            ):
                strings.add(name)
                changed = True
    return frozenset(strings)


def collate_argument_names(tree: ast.Module) -> frozenset[str]:
    """The names of the functions this file passes as `collate_fn=` arguments
    (`collate_fn=featurize`, `collate_fn=self.pad`, `collate_fn=partial(pad, value=0)`): collate
    functions whatever their names."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg != "collate_fn":
                continue
            value = keyword.value
            if (
                isinstance(value, ast.Call)
                and (dotted(value.func) or "").rsplit(".", 1)[-1] == "partial"
                and value.args
            ):
                value = value.args[0]
            if isinstance(value, ast.Name):
                names.add(value.id)
            elif isinstance(value, ast.Attribute):
                names.add(value.attr)
    return frozenset(names)


def is_collate_name(name: str, class_name: str | None) -> bool:
    """A collate function by its name: `collate_fn`, `pad_collate`, a dataset's `collater`,
    or the `__call__` of a collator class (`BatchCollator()`)."""
    if "collat" in name.lower():
        return True
    return name == "__call__" and class_name is not None and "collat" in class_name.lower()


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


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _none_test(test: ast.expr) -> tuple[str, bool] | None:
    """`x is None` -> ("x", True), `x is not None` -> ("x", False), else None."""
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.left, ast.Name)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        if isinstance(test.ops[0], ast.Is):
            return test.left.id, True
        if isinstance(test.ops[0], ast.IsNot):
            return test.left.id, False
    return None


def _sets_when_none(statement: ast.stmt) -> str | None:
    """The name `if name is None: ...; name = <value>` (no `else`) surely sets: after it the
    name is not None (the value is not the literal `None`)."""
    if not isinstance(statement, ast.If) or statement.orelse:
        return None
    tested = _none_test(statement.test)
    if tested is None or not tested[1]:
        return None
    for line in statement.body:
        if (
            isinstance(line, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == tested[0] for t in line.targets)
            and not (isinstance(line.value, ast.Constant) and line.value.value is None)
        ):
            return tested[0]
    return None


def _stored_params(value: list[Atom], scope: Scope) -> list[Atom]:
    """What a method other than `__init__` stores in `self.<name>`: when it is one of the
    method's parameters or an element of one (`self.mask = batch["mask"]` in a `set_input(self,
    batch)` the step calls), the parameter named by its method (`["ap", method, i]`), so the
    project model can ask what the method's calls pass it. `__init__`'s parameters are what
    each construction passes (ProjectModel._constructed_attribute); values computed from a
    parameter (`batch.get("names")`) stay as they were."""
    info = scope.info
    if (
        info is None
        or scope.cls is None
        or info.name == "__init__"
        or info.cls != scope.cls.qualname
        or len(value) != 1
    ):
        return value
    atom = value[0]
    while isinstance(atom, list) and atom:
        if atom[0] == "e" and len(atom[2]) == 1:
            atom = atom[2][0]
        elif atom[0] == "k" and len(atom[3]) == 1:
            atom = atom[3][0]  # what it is when no collate function says otherwise
        else:
            break
    if not (isinstance(atom, list) and len(atom) >= 2 and atom[0] == "p"):
        return value

    def named(atom: Atom) -> Atom:
        if not isinstance(atom, list):
            return atom
        if atom[:1] == ["p"]:
            return ["ap", info.name, atom[1]]
        return [named(a) if isinstance(a, list) else a for a in atom]

    return [named(value[0])]


def _rebound_names(statement: ast.stmt) -> set[str]:
    """Every name a statement may bind anywhere in it (assignments, loop and `with` targets,
    `del`, walrus)."""
    out: set[str] = set()
    for node in ast_walk(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
    return out


def _reports_anomaly(test: ast.expr, statements: list[ast.stmt]) -> bool:
    """`if torch.any(empty): print(f"... {empty.sum().item()}")`: a branch that only prints
    or logs, under a check of a tensor for bad values (`torch.isnan(x).any()`,
    `torch.any(m)`, `not torch.all(ok)`). It runs when the step goes wrong, not every step;
    the check itself is the cost every step pays."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if not isinstance(test, ast.Call):
        return False
    names = {
        n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
        for n in ast_walk(test)
        if isinstance(n, ast.Call)
    }
    outer = test.func.attr if isinstance(test.func, ast.Attribute) else getattr(test.func, "id", "")
    if outer not in ANOMALY_REDUCTIONS and not names & ANOMALY_CHECKS:
        return False
    return bool(statements) and all(
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and (callee := dotted(statement.value.func)) is not None
        and is_report_callee(callee)
        for statement in statements
    )


def _warns_only(statements: list[ast.stmt]) -> bool:
    """Whether every statement of a branch is a warning call (`warnings.warn(...)`,
    `logger.warning(...)`): the branch reports an abnormal condition."""
    return bool(statements) and all(
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and (callee := dotted(statement.value.func)) is not None
        and is_warning_callee(callee)
        for statement in statements
    )


def _unchanged_param(scope: Scope, name: str) -> bool:
    """Whether a parameter may still hold what the call passed: not when every path
    before has assigned it something else (a closure's outer parameter: may)."""
    initial = scope.params.get(name)
    if initial is None:
        return True
    values = scope.env.get(name)
    return values is None or values == initial or any(v in values for v in initial)


def _snapshot(scope: Scope) -> tuple[Any, ...]:
    """What the code at this point sees: locals, imports, local instances, the class, the
    function's parameters and the project classes their annotations name."""
    return (
        dict(scope.env),
        scope.imports,
        dict(scope.instances),
        scope.cls,
        scope.params,
        scope.param_classes,
    )


def _note(scope: Scope, name: str, old: Any) -> None:
    """Carry a journal entry of an inner branch up to the enclosing branch's journal."""
    if scope.journals and name not in scope.journals[-1]:
        scope.journals[-1][name] = old


def _restore(env: dict[str, list[Atom]], name: str, old: Any) -> None:
    if old is MISSING:
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


def _may_be_lazy_test(test: ast.expr) -> bool:
    """A cheap look at the shapes `guards.lazy_attribute` reads (`not self.x`,
    `self.x is None`, `not hasattr(self, ...)`, `self.x == False`, `self.n.item() == 0`)."""
    if isinstance(test, ast.BoolOp) and test.values:
        if isinstance(test.op, ast.And):  # `self.training and not self.built`
            return any(_may_be_lazy_test(value) for value in test.values)
        return _may_be_lazy_test(test.values[0])  # `self.cache is None or ...`
    if isinstance(test, ast.BinOp) and isinstance(test.op, ast.BitAnd):
        # `(self._initialized is False) & self.training`
        return _may_be_lazy_test(test.left) or _may_be_lazy_test(test.right)
    if isinstance(test, ast.Attribute):  # `if self._first:`, cleared by the body
        return isinstance(test.value, ast.Name) and test.value.id == "self"
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        operand = test.operand
        return isinstance(operand, (ast.Attribute, ast.Call))
    # `self.x is None`, `self.n.item() == 0`
    return isinstance(test, ast.Compare) and isinstance(test.left, (ast.Attribute, ast.Call))


class _Cond(NamedTuple):
    """A test the code runs under (`holds`) or where it fails, for the project model's
    routes (param_routes): recorded on a call when it reads a parameter of the function."""

    expr: ast.expr
    holds: bool


class _Test(NamedTuple):
    """A condition the code runs under: where it fails (`negated`: after `if T: return`),
    and the class whose boolean methods it may call (`if self._should_log():`)."""

    expr: ast.expr
    negated: bool
    cls: Any
    device: bool = True  # whether a device test counts (not in the else of `if cuda:`)


def _single_return(method: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr | None:
    """`EXPR` of a method whose body is `return EXPR` (after an optional docstring)."""
    body = method.body
    if (
        len(body) > 1
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return body[0].value
    return None


def _early_exit_test(statement: ast.stmt) -> ast.expr | None:
    """`if TEST: return` (or continue/raise/break) with no else: the code after it runs under
    `not TEST`: its names and shape are read where it fails
    (`if step % n != 0: return`)."""
    if not isinstance(statement, ast.If) or statement.orelse or len(statement.body) != 1:
        return None
    if isinstance(statement.body[0], (ast.Return, ast.Continue, ast.Raise)):
        return statement.test
    return None


def _size_uses(tree: ast.Module) -> tuple[_UseTable, _UseTable]:
    """Names passed as sizes or dimensions to a tensor method (`x.view(n, rows, cols)`,
    `x.reshape((n, -1))`, `x.view(n, rows // k, k)`, `x.permute(0, d, 1)`), or to a
    parameter that a function of this module passes so (`self.to_windows(x, rows, cols)`
    where `to_windows` reshapes by them): name -> (the sorted lines where it is passed so,
    the sorted lines where it is bound). Then the same for the names numpy-only methods
    are called on (`values.astype(int)`)."""
    _, tables = _read_tree(tree, syntax=False, uses=True)
    return tables


def _use_tables(
    size_args: dict[str, list[int]],
    receivers: dict[str, list[int]],
    stores: dict[str, list[int]],
    functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]],
    local_calls: list[tuple[str, bool, ast.Call]],
) -> tuple[_UseTable, _UseTable]:
    """`_size_uses`'s tables from what the walk collected: the lines where each name is
    passed as a size (and on through the module's own helpers) or receives a numpy-only
    method, with the lines where it is bound."""
    numpy = {
        name: (sorted(lines), sorted(stores.get(name, ()))) for name, lines in receivers.items()
    }
    if not size_args:
        return {}, numpy
    table = {
        name: (sorted(lines), sorted(stores.get(name, ()))) for name, lines in size_args.items()
    }
    for _ in range(2):  # a size passed on through two helpers
        found = False
        for name, bound, call in local_calls:
            defs = functions.get(name)
            if not defs:
                continue
            for position, arg in enumerate(call.args):
                if isinstance(arg, ast.Starred):
                    break  # the positions after it are not known
                if not isinstance(arg, ast.Name) or arg.lineno in table.get(arg.id, ((), ()))[0]:
                    continue
                if all(_size_param(table, d, position, bound) for d in defs):
                    lines, bound_at = table.get(arg.id, ([], sorted(stores.get(arg.id, ()))))
                    table[arg.id] = (sorted([*lines, arg.lineno]), bound_at)
                    found = True
        if not found:
            break
    return table, numpy


# The targets a statement or expression binds names in, by its type.
_BINDING_TARGETS: dict[type, Any] = {
    ast.Assign: lambda node: node.targets,
    ast.AugAssign: lambda node: [node.target],
    ast.AnnAssign: lambda node: [node.target],
    ast.For: lambda node: [node.target],
    ast.AsyncFor: lambda node: [node.target],
    ast.comprehension: lambda node: [node.target],
    ast.NamedExpr: lambda node: [node.target],
    ast.withitem: lambda node: [node.optional_vars] if node.optional_vars is not None else [],
}


def _bound_names(target: ast.expr) -> list[ast.Name]:
    """The names an assignment target binds (`a, (b, *c) = ...`)."""
    if isinstance(target, ast.Name):
        return [target]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _bound_names(element)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


def _arithmetic_names(node: ast.expr) -> list[ast.Name]:
    """The names an arithmetic expression is made of (`rows // size` -> rows, size; not
    what a call converts: `int(t)` may read a tensor)."""
    if isinstance(node, ast.Name):
        return [node]
    if isinstance(node, ast.BinOp):
        return [*_arithmetic_names(node.left), *_arithmetic_names(node.right)]
    if isinstance(node, ast.UnaryOp):
        return _arithmetic_names(node.operand)
    return []


def _first_use(
    table: dict[str, tuple[list[int], list[int]]],
    name: str,
    node: ast.FunctionDef | ast.AsyncFunctionDef,
) -> bool:
    """Whether the parameter `name` of the function is used so (passed as a size, or the
    receiver of a numpy-only method) in its body before the body binds the name again
    (`h = h.flatten(1)` then `x.view(n, h)` says nothing of the parameter `h`; in
    `v = v.astype(int)` the use comes first)."""
    found = table.get(name)
    if found is None:
        return False
    lines, stores = found
    end = node.end_lineno or node.lineno
    first = bisect.bisect_left(lines, node.lineno)
    if first >= len(lines) or lines[first] > end:
        return False
    store = bisect.bisect_left(stores, node.lineno)
    return store >= len(stores) or stores[store] >= lines[first]


def _size_param(
    table: dict[str, tuple[list[int], list[int]]],
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    position: int,
    bound: bool,
) -> bool:
    """Whether the parameter that positional argument `position` of a call binds (`bound`:
    a `self.` call) is passed as a size in the function's body."""
    args = node.args
    params = [*args.posonlyargs, *args.args]
    index = position + 1 if bound and params and params[0].arg == "self" else position
    if index >= len(params):
        return False
    return _first_use(table, params[index].arg, node)


def _self_target(target: ast.expr) -> bool:
    return (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    )


# Callees that call their first argument once per element of the others: `map(f, xs)`,
# `executor.map(f, xs, ys)`, `pool.imap(f, xs)`.
_MAPPERS = frozenset({"map", "imap", "imap_unordered"})


def _mapped_call(node: ast.Call) -> ast.Call | None:
    """`f(xs[0], ys[0])` for `map(f, xs, ys)` / `executor.map(f, xs, ys)` where `f` is a
    name or attribute (what each call of `f` is passed: an element of each iterable), else
    None. Its positions are the map's, for the call's line."""
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if (
        name not in _MAPPERS
        or len(node.args) < 2
        or node.keywords
        or any(isinstance(a, ast.Starred) for a in node.args)
        or not isinstance(node.args[0], (ast.Name, ast.Attribute))
        or (isinstance(func, ast.Attribute) and name != "map" and name not in _MAPPERS)
    ):
        return None
    elements: list[ast.expr] = [
        ast.copy_location(
            ast.Subscript(value=iterable, slice=ast.Constant(0), ctx=ast.Load()), iterable
        )
        for iterable in node.args[1:]
    ]
    return ast.copy_location(ast.Call(func=node.args[0], args=elements, keywords=[]), node)


# Subscripted annotations that are not a class of their own: `Optional[X]` is X (or None).
_TYPING_WRAPPERS = frozenset({"Optional", "Annotated"})
_TYPING_GENERICS = frozenset(
    {
        "Union", "List", "Dict", "Tuple", "Set", "FrozenSet", "Type", "Sequence", "Mapping",
        "Iterable", "Iterator", "Callable", "Literal", "ClassVar", "Final", "Any",
        "MutableMapping", "MutableSequence", "Collection", "Generator", "Awaitable",
    }
)  # fmt: skip


def _annotated_class(annotation: ast.expr | None) -> ast.expr | None:
    """The class a parameter's annotation names: `Decoder`, `models.Decoder`, the class of a
    generic `Decoder[T]`, `Optional[Decoder]`; None for containers, unions and strings."""
    if annotation is None:
        return None
    if isinstance(annotation, ast.Subscript):
        head = dotted(annotation.value)
        last = head.rsplit(".", 1)[-1] if head is not None else None
        if last in _TYPING_WRAPPERS:
            inner = annotation.slice
            if isinstance(inner, ast.Tuple) and inner.elts:
                inner = inner.elts[0]  # `Annotated[Decoder, ...]`
            return _annotated_class(inner)
        if last is None or last in _TYPING_GENERICS:
            return None
        annotation = annotation.value
    return annotation if _class_name(annotation) else None


def _class_name(annotation: ast.expr) -> bool:
    """A plain class annotation (`Decoder`, `models.Decoder`), not a generic or a string."""
    name = dotted(annotation) if isinstance(annotation, (ast.Name, ast.Attribute)) else None
    return name is not None and name.rsplit(".", 1)[-1][:1].isupper()


def _is_abstract(node: ast.FunctionDef | ast.AsyncFunctionDef, decorators: list[str]) -> bool:
    """An `@abstractmethod`, or a body (after its docstring) that only raises
    NotImplementedError (after assigning its message: `msg = f"..."; raise
    NotImplementedError(msg)`)."""
    if any(d.rsplit(".", 1)[-1] == "abstractmethod" for d in decorators):
        return True
    body = node.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    while (
        len(body) > 1
        and isinstance(body[0], ast.Assign)
        and isinstance(body[0].value, ast.JoinedStr | ast.Constant)
    ):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc
    name = exc.func if isinstance(exc, ast.Call) else exc
    return isinstance(name, ast.Name) and name.id == "NotImplementedError"


def _method_refs(node: ast.expr) -> list[tuple[str, str]]:
    """The methods a value refers to without calling them: `self.m` ("self", "m"),
    `self.model.m` ("attr", "model.m"), and either side of `a if c else b` of those."""
    if isinstance(node, ast.IfExp):
        body, orelse = _method_refs(node.body), _method_refs(node.orelse)
        return body + orelse if body and orelse else []
    if not isinstance(node, ast.Attribute):
        return []
    base = node.value
    if isinstance(base, ast.Name) and base.id == "self":
        return [("self", node.attr)]
    if (
        isinstance(base, ast.Attribute)
        and isinstance(base.value, ast.Name)
        and base.value.id == "self"
    ):
        return [("attr", f"{base.attr}.{node.attr}")]
    return []


# How many arguments Lightning's loops pass to a step hook (after `self`): the batch, its
# index, and the dataloader index (evaluation) or the optimizer index and hidden state
# (training, Lightning 1.x).
_HOOK_ARITY = {"training_step": 4, "validation_step": 3, "test_step": 3, "predict_step": 3}
_LOOP_ARGUMENTS = frozenset({"dataloader_idx", "optimizer_idx", "hiddens"})


def _unpassed_flag_branches(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
) -> list[tuple[ast.If, str]]:
    """The branches of a step hook's body that never run in Lightning's loop: a hook
    parameter after those the loop passes (`def validation_step(self, batch, i, d, vis=False)`)
    with a false default (False, None, 0, "") and never rebound stays false there, so the body
    of `if vis:` / `if vis and save:` (and the else of `if not vis:`) runs only when the
    project's own code calls the hook with it (a visualisation script), not every step.
    Returns (the `if`, "body" or "else")."""
    arity = _HOOK_ARITY.get(node.name)
    if arity is None:
        return []
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults = dict(
        zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
    )
    defaults.update(
        (a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None
    )
    flags = {
        a.arg
        for a, default in defaults.items()
        if (a in args.kwonlyargs or positional.index(a) > arity)
        and a.arg not in _LOOP_ARGUMENTS
        and isinstance(default, ast.Constant)
        and not default.value
    }
    if not flags:
        return []
    nodes = list(ast_walk(ast.Module(body=node.body, type_ignores=[])))
    flags -= {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    found: list[tuple[ast.If, str]] = []
    for statement in nodes:
        if not isinstance(statement, ast.If):
            continue
        test = statement.test
        operands = (
            test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        )
        if any(isinstance(v, ast.Name) and v.id in flags for v in operands):
            found.append((statement, "body"))
        elif (
            isinstance(test, ast.UnaryOp)
            and isinstance(test.op, ast.Not)
            and isinstance(test.operand, ast.Name)
            and test.operand.id in flags
        ):
            found.append((statement, "else"))
    return found


def _none_default_names(args: ast.arguments) -> set[str]:
    """The parameters that default to None."""
    pairs = defaulted_params(args)
    return {
        arg.arg
        for arg, default in pairs
        if isinstance(default, ast.Constant) and default.value is None
    }


def _host_narrowed(atoms: list[Atom] | None) -> bool:
    """Whether an `isinstance` test narrows a name to Python data only (a number, host
    data, a numpy array): no tensor."""
    return atoms in (["number"], ["host"], ["numpy"])


def _exits(body: list[ast.stmt]) -> bool:
    """Whether a branch ends by leaving the function (`raise`, `return`)."""
    return bool(body) and isinstance(body[-1], (ast.Raise, ast.Return))


def _asserted_none(body: list[ast.stmt], optional: set[str]) -> dict[str, int]:
    """The None-default parameters an `assert p is None` among the top statements of a
    function's body pins to None, with the line of the assert (`python -O`, which strips
    asserts, is not how training runs)."""
    found: dict[str, int] = {}
    for statement in body:
        if not isinstance(statement, ast.Assert):
            continue
        test = statement.test
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Is)
            and isinstance(test.left, ast.Name)
            and test.left.id in optional
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None
        ):
            found.setdefault(test.left.id, statement.lineno)
    if found:
        for statement in body:
            for node in ast_walk(statement):
                if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                    found.pop(node.id, None)  # reassigned: no longer what the assert saw
    return found


def _tensor_annotation(node: ast.expr) -> bool:
    """`Tensor`, `torch.Tensor`, `torch.BoolTensor` (a `*Tensor` class of torch), alone or
    optional (`Optional[Tensor]`, `Tensor | None`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return False
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [node.left, node.right]
        nones = [s for s in sides if isinstance(s, ast.Constant) and s.value is None]
        rest = [s for s in sides if s not in nones]
        return len(nones) == 1 and len(rest) == 1 and _tensor_annotation(rest[0])
    if isinstance(node, ast.Subscript) and (dotted(node.value) or "").rsplit(".", 1)[-1] == (
        "Optional"
    ):
        return _tensor_annotation(node.slice)
    text = dotted(node)
    if text is None:
        return False
    return text == "Tensor" or (text.startswith("torch.") and text.endswith("Tensor"))


_LOCAL_DEVICES = ("cpu", "cuda", "mps")


def _local_device_text(node: ast.expr) -> bool:
    """A device string of CUDA, MPS or the CPU: `"cpu"`, `"cuda:0"`, `f"cuda:{i}"`,
    `"cuda:{}".format(i)`, `"cuda:" + str(i)`."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    ):
        node = node.func.value
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        node = node.left
    elif isinstance(node, ast.JoinedStr) and node.values:
        node = node.values[0]
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return False
    text = node.value
    return text in _LOCAL_DEVICES or (text.split(":", 1)[0] in ("cuda", "mps") and ":" in text)


def _returns_gpu_or_cpu_device(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether every `return` of the function (at least one, none bare) gives a CUDA/MPS
    or CPU device: such a string, `torch.device(...)` of one, a choice between such, or a
    local name every assignment of which (plain `name = ...`, nothing else binds it) is
    one. `device = torch.device(f"cuda:{gpu}") if use_gpu else torch.device("cpu")`."""
    returns: list[ast.expr | None] = []
    assigned: dict[str, list[ast.expr]] = {}
    other: set[str] = set()
    stack: list[ast.AST] = list(function.body)
    while stack:
        current = stack.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(current, ast.Return):
            returns.append(current.value)
        elif isinstance(current, ast.Assign) and all(
            isinstance(t, ast.Name) for t in current.targets
        ):
            for target in current.targets:
                assert isinstance(target, ast.Name)
                assigned.setdefault(target.id, []).append(current.value)
            stack.append(current.value)
            continue
        elif isinstance(current, ast.Name) and isinstance(current.ctx, (ast.Store, ast.Del)):
            other.add(current.id)
        stack.extend(ast_children(current))

    def device(node: ast.expr | None, depth: int) -> bool:
        if node is None or depth > 3:
            return False
        if isinstance(node, ast.IfExp):
            return device(node.body, depth) and device(node.orelse, depth)
        if isinstance(node, ast.Name):
            values = assigned.get(node.id)
            return (
                bool(values)
                and node.id not in other
                and all(device(v, depth + 1) for v in values or ())
            )
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            text = dotted(node.func)
            if text is not None and text in ("torch.device", "device"):
                return _local_device_text(node.args[0]) or device(node.args[0], depth + 1)
        return _local_device_text(node)

    return bool(returns) and all(device(r, 0) for r in returns)


def _own_returns(function: ast.AST) -> list[ast.Return]:
    """The `return` statements of a function, not of the functions it defines."""
    out: list[ast.Return] = []
    stack = list(ast_children(function))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            out.append(node)
        elif not isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
        ):
            stack.extend(ast_children(node))
    return out
