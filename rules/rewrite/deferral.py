"""Deferring per-step host reads to the end of the epoch (TPU101, TPU103).

    # before                                       # after
    def training_step(self, batch, i):             def training_step(self, batch, i):
        self.losses.append(loss.item())                self.losses.append(loss.detach())
        self.preds.append(p.argmax(1).cpu())           self.preds.append(p.argmax(1).detach())

    def on_train_epoch_end(self):                  def on_train_epoch_end(self):
        mean = sum(self.losses) / len(...)             mean = sum(torch.stack(self.losses)
                                                           .tolist()) / len(...)
        acc = f(torch.cat(self.preds))                 acc = f(torch.cat(self.preds).cpu())
        self.losses.clear()                            self.losses.clear()

A value read back every step only to be collected and used at the end of the epoch stays on
the device instead, and the code that reads the collection reads it once, converted to what
it held before: Python numbers (`torch.stack(...).tolist()`), CPU tensors (`torch.cat(...)
.cpu()`) or numpy arrays (`torch.cat(...).cpu().numpy()`). The rewrite is the container's,
not one line's: its producer and every reader in the project (methods, callbacks through
`pl_module`, metrics helpers) are rewritten together, or none is.

It is offered only when it is exact, which takes:

- one producer: the container is filled in one place, in code that runs every step;
- readers that run when the epoch (or the loop) ends or starts, never every step, and that use
  the collection in ways whose converted form computes the same (aggregations, iteration,
  indexing, `torch.cat`/`torch.stack`/`np.concatenate` of the tensors);
- emptied when the producer's epoch ends (`self.preds.clear()` in `on_validation_epoch_end`),
  so no device tensor stays in it between epochs where host values were;
- what each step keeps is visibly small: a number, or one prediction per sample
  (`logits.argmax(1)`): the device holds it until the epoch ends.

Otherwise the finding says why there is no fix. The facts about who touches the container come
from tpulint.analysis.containers; everything here works on `ast` trees of the files involved,
and the fix is a set of text edits across them (FixSpec.text_edits).
"""

from __future__ import annotations

import ast
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

import libcst as cst

from tpulint.analysis.containers import (
    EPOCH_END_HOOKS,
    Access,
    AttributeIndex,
    ParsedFile,
    attribute_index,
    phase_of,
    related_classes,
    step_loops,
)
from tpulint.analysis.context import FileContext
from tpulint.analysis.project import ClassKind, ProjectModel
from tpulint.analysis.python_ast import walk as ast_walk
from tpulint.datatypes import roundtrip
from tpulint.datatypes.diagnostics import Applicability, Edit, FileEdits
from tpulint.rule_api.rule import FixSpec

from .sync import _uses_other_arrays

# What `.item()`'s number may be wrapped in before it is collected.
_NUMBER_WRAPPERS = frozenset({"int", "float", "bool", "round"})
# Methods that may follow `.cpu()` in the collected expression: conversions, reshapes and
# copies that compute the same on the device (no float64: TPUs do not compute in it).
_AFTER_HOST = frozenset(
    {
        "detach",
        "numpy",
        "float",
        "long",
        "int",
        "bool",
        "half",
        "bfloat16",
        "squeeze",
        "unsqueeze",
        "flatten",
        "view",
        "reshape",
        "clone",
        "contiguous",
    }
)
_SHAPE_KEEPING = _AFTER_HOST - {"numpy", "unsqueeze"}
# Reductions of a whole tensor to one value (no `dim`): their result is 0-dim.
_FULL_REDUCTIONS = frozenset(
    {
        "sum",
        "mean",
        "max",
        "min",
        "amax",
        "amin",
        "prod",
        "std",
        "var",
        "norm",
        "all",
        "any",
        "logsumexp",
        "median",
        "nansum",
        "nanmean",
        "count_nonzero",
        "numel",
    }
)
_FUNCTIONAL_LOSSES = frozenset(
    {
        "cross_entropy",
        "binary_cross_entropy",
        "binary_cross_entropy_with_logits",
        "nll_loss",
        "mse_loss",
        "l1_loss",
        "smooth_l1_loss",
        "huber_loss",
        "kl_div",
        "soft_margin_loss",
        "multilabel_soft_margin_loss",
        "poisson_nll_loss",
        "gaussian_nll_loss",
        "ctc_loss",
        "cosine_embedding_loss",
        "margin_ranking_loss",
        "hinge_embedding_loss",
        "triplet_margin_loss",
    }
)
# Index outputs that leave one prediction per sample (the class dimension reduced).
_INDEX_REDUCTIONS = frozenset({"argmax", "argmin"})
_LIST_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "sort", "reverse"})
_LIST_READERS = frozenset({"copy", "index", "count"})
# Calls that read a list of numbers without keeping it: builtins and the numeric modules.
_READING_BUILTINS = frozenset(
    {
        "sum",
        "len",
        "max",
        "min",
        "sorted",
        "list",
        "tuple",
        "set",
        "any",
        "all",
        "enumerate",
        "zip",
        "map",
        "filter",
        "iter",
        "reversed",
        "print",
        "str",
        "repr",
        "format",
        "float",
        "int",
        "round",
        "abs",
    }
)
_READING_MODULES = frozenset({"np", "numpy", "torch", "statistics", "math", "json", "scipy"})
_LOGGING_METHODS = frozenset({"info", "debug", "warning", "warn", "error", "print", "write"})
_TORCH_JOINS = frozenset(
    {"cat", "concat", "concatenate", "stack", "vstack", "hstack", "row_stack", "dstack"}
)
_NUMPY_JOINS = {
    "concatenate": "cat",
    "stack": "stack",
    "vstack": "vstack",
    "hstack": "hstack",
    "row_stack": "row_stack",
}


@dataclass
class Deferral:
    """The outcome for a value collected into a container: a fix, or why there is none."""

    fix: FixSpec | None = None
    reason: str | None = None


@dataclass
class _Producer:
    file: ParsedFile
    append: ast.Call  # `<container>.append(...)`
    container: ast.expr  # `self.losses` or `self.metrics["loss"]`
    element: ast.expr  # the collected expression as written (`loss.item()`)
    receiver: ast.expr  # the device value (`loss`)
    kind: str  # "number", "tensor" or "array"
    wrapper: str | None  # `int`, `float`, ... around the number
    replacement: str  # the collected expression once deferred
    attr: str
    key: ast.expr | None  # the constant key of `self.metrics["loss"]`
    model: ProjectModel | None = None


@dataclass
class _Edits:
    by_file: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)
    files: dict[str, ParsedFile] = field(default_factory=dict)
    readers: list[str] = field(default_factory=list)  # "on_train_epoch_end (model.py:30)"

    def add(self, file: ParsedFile, begin: int, end: int, text: str) -> None:
        self.files[file.path] = file
        self.by_file.setdefault(file.path, []).append((begin, end, text))


def defer(ctx: FileContext, node: cst.Call, sync: str) -> Deferral | None:
    """The deferral of the value read back by `node` (`x.item()`: sync "item"; `float(x)`:
    "number"; `x.cpu()`, `x.to("cpu")`: "host"; `x.tolist()`: "list"), or None when the value
    is not collected into a container of the module (then this rewrite has nothing to say)."""
    if not _may_collect(ctx, node) or _uses_other_arrays(ctx):
        return None  # an MLX or JAX array has `.item()` but no `.detach()`
    view = ctx.analysis.view
    owner = ctx.owner
    if view is None or owner is None or ctx.function is None:
        return None
    model = view.model
    index = attribute_index(model)
    own = index.file(ctx.path, ctx.source, lambda: ctx.ast_tree)
    if own is None:
        return None
    start, end = _position(ctx, node)
    target = own.node_at(start, end)
    if not isinstance(target, ast.Call):
        return None
    producer = _producer(own, target, sync)
    if producer is None:
        return None
    if isinstance(producer, str):
        return Deferral(reason=producer)
    return _plan(ctx, model, index, owner, producer)


def _may_collect(ctx: FileContext, node: cst.Call) -> bool:
    """A cheap look before parsing anything: the statement holding `node` appends to
    something, or binds a local (followed to an append later)."""
    statement = ctx.enclosing_statement(node)
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    code = ctx.module.code_for_node(statement)
    return ".append(" in code or (
        len(statement.body) == 1
        and isinstance(statement.body[0], cst.Assign)
        and isinstance(statement.body[0].targets[0].target, cst.Name)
    )


def _position(ctx: FileContext, node: cst.CSTNode):
    positions = ctx.positions
    positions.resolve([node], ctx.parents)
    return positions.range(node)


# --- the producer --------------------------------------------------------------------------


def _method(node: ast.AST, name: str | None = None) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and (name is None or node.func.attr == name)
    )


def _is_host_move(node: ast.Call) -> bool:
    """`x.cpu()`, `x.to("cpu")`, `x.to(device="cpu")`, `x.to(torch.device("cpu"))`."""
    if not isinstance(node.func, ast.Attribute):
        return False
    if node.func.attr == "cpu" and not node.args and not node.keywords:
        return True
    if node.func.attr != "to" or len(node.args) + len(node.keywords) != 1:
        return False
    value = node.args[0] if node.args else node.keywords[0].value
    if node.keywords and node.keywords[0].arg != "device":
        return False
    if isinstance(value, ast.Call) and value.args and _dotted(value.func, "device"):
        value = value.args[0]
    return isinstance(value, ast.Constant) and value.value == "cpu"


def _dotted(node: ast.AST, last: str) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == last) or (
        isinstance(node, ast.Name) and node.id == last
    )


def _producer(file: ParsedFile, sync: ast.Call, kind: str) -> _Producer | str | None:
    """The producer around the read-back `sync`: what is collected, into which container."""
    function = file.function_of(sync)
    if function is None:
        return None
    wrapper = None
    if kind == "item":
        if not (_method(sync, "item") and not sync.args):
            return None
        receiver = sync.func.value  # type: ignore[attr-defined]
        element: ast.expr = sync
        parent = file.parent(sync)
        if (
            isinstance(parent, ast.Call)
            and isinstance(parent.func, ast.Name)
            and parent.func.id in _NUMBER_WRAPPERS
            and parent.args == [sync]
            and not parent.keywords
        ):
            wrapper, element = parent.func.id, parent
        value_kind = "number"
    elif kind == "number":
        if not (isinstance(sync.func, ast.Name) and len(sync.args) == 1 and not sync.keywords):
            return None
        wrapper, receiver, element, value_kind = sync.func.id, sync.args[0], sync, "number"
    elif kind == "host":
        if not _is_host_move(sync):
            return None
        receiver = sync.func.value  # type: ignore[attr-defined]
        element = sync
        value_kind = "tensor"
        while True:
            holder = file.parent(element)
            call = file.parent(holder) if holder is not None else None
            if (
                isinstance(holder, ast.Attribute)
                and holder.value is element
                and holder.attr in _AFTER_HOST
                and isinstance(call, ast.Call)
                and call.func is holder
                and value_kind != "array"
            ):
                element = call
                if holder.attr == "numpy":
                    value_kind = "array"
                continue
            break
    elif kind == "list":
        found = _collected(file, sync, function)
        if isinstance(found, tuple):
            return (
                "it is collected as Python lists (`.tolist()`), which have no exact one-read form"
            )
        return found if isinstance(found, str) else None
    else:
        return None
    found = _collected(file, element, function)
    if not isinstance(found, tuple):
        return found
    append, container, attr, key = found
    replacement = _deferred_text(file, element, receiver, value_kind, function)
    if replacement is None:
        return "the collected expression is written in a form this rewrite does not take apart"
    return _Producer(
        file, append, container, element, receiver, value_kind, wrapper, replacement, attr, key
    )


def _collected(
    file: ParsedFile, element: ast.expr, function: ast.AST
) -> tuple[ast.Call, ast.expr, str, ast.expr | None] | str | None:
    """(the append call, the container, its attribute, its key) when `element` is appended to
    `self.<attr>` or `self.<attr>[<constant>]`, directly or through a local read only there; a
    reason when it goes into such a container of the module but not in a form this rewrite
    follows; None when it goes into no container of the module (a local list, another
    object: then this rewrite has nothing to say)."""
    self_name = _self_name(function)
    parent = file.parent(element)
    local = None
    if isinstance(parent, ast.Assign):
        if len(parent.targets) != 1 or not isinstance(parent.targets[0], ast.Name):
            return None
        local = parent.targets[0].id
        loads, stores = _uses(function, local)
        appended = [
            n
            for n in loads
            if _is_append_arg(file, n) and _is_module_state(file.parent(n).func.value, self_name)  # type: ignore[union-attr]
        ]
        if not appended:
            return None
        if len(stores) != 1:
            return f"`{local}` is bound more than once in the step"
        if len(loads) != 1:
            other = next((n for n in loads if n not in appended), appended[0])
            return f"`{local}` is also {_use_of(file, other)} in the step"
        element = appended[0]
    if not _is_append_arg(file, element):
        return None
    append = file.parent(element)
    assert isinstance(append, ast.Call) and isinstance(append.func, ast.Attribute)
    container = append.func.value
    if not _is_module_state(container, self_name):
        return None
    attr, key = _container_of(container, self_name)
    if attr is None:
        return (
            f"`{file.source(container)}` is a container of the module indexed by a key that varies"
        )
    if not isinstance(file.parent(append), ast.Expr):
        return None
    return append, container, attr, key


def _is_module_state(node: ast.expr, self_name: str | None) -> bool:
    """`self.<attr>`, possibly indexed (`self.<attr>[k]`)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == self_name
    )


def _is_append_arg(file: ParsedFile, node: ast.expr) -> bool:
    call = file.parent(node)
    return (
        isinstance(call, ast.Call)
        and _method(call, "append")
        and call.args == [node]
        and not call.keywords
    )


def _self_name(function: ast.AST) -> str | None:
    args = [*function.args.posonlyargs, *function.args.args]  # type: ignore[attr-defined]
    return args[0].arg if args else None


def _container_of(node: ast.expr, self_name: str | None) -> tuple[str | None, ast.expr | None]:
    """(`losses`, None) for `self.losses`, (`metrics`, `"loss"`) for `self.metrics["loss"]`."""
    key = None
    if isinstance(node, ast.Subscript):
        if not (isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, (str, int))):
            return None, None
        key, node = node.slice, node.value
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == self_name
    ):
        return node.attr, key
    return None, None


def _uses(function: ast.AST, name: str) -> tuple[list[ast.Name], list[ast.AST]]:
    loads: list[ast.Name] = []
    stores: list[ast.AST] = []
    for node in ast_walk(function):
        if isinstance(node, ast.Name) and node.id == name:
            (loads if isinstance(node.ctx, ast.Load) else stores).append(node)
        elif isinstance(node, ast.arg) and node.arg == name:
            stores.append(node)
    return loads, stores


def _use_of(file: ParsedFile, node: ast.AST) -> str:
    """What a read of the collected value does, for messages."""
    child: ast.AST = node
    for ancestor in file.ancestors(node):
        if isinstance(ancestor, ast.Attribute) and ancestor.value is child:
            return "used"  # `value.method(...)`: the value's own method, not a consumer
        child = ancestor
        if isinstance(ancestor, ast.Call):
            func = ancestor.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "print":
                return "printed"
            if name in ("log", "log_dict"):
                return "logged"
            if name in _LOGGING_METHODS or "write" in name or "save" in name:
                return "written out"
            return f"passed to `{name}`" if name else "used"
        if isinstance(ancestor, ast.JoinedStr):
            return "formatted into text"
        if isinstance(ancestor, ast.stmt):
            break
    return "used"


def _deferred_text(
    file: ParsedFile, element: ast.expr, receiver: ast.expr, kind: str, function: ast.AST
) -> str | None:
    """The collected expression once it stays on the device (None when it is written in a
    form whose pieces cannot be taken apart: parentheses inside the chain)."""
    base = file.source(receiver)
    if not _is_atom(receiver):
        base = f"({base})"
    if kind == "number":
        text = base if _spine_has(receiver, "detach") else f"{base}.detach()"
        if not _zero_dim(receiver, function):
            text += ".reshape(())"  # `.item()` takes any one-element tensor
        return text
    # `x.cpu().float().numpy()` -> `x.detach().float()`: the move and `.numpy()` go, the
    # conversions stay, a `.detach()` replaces the move unless the chain has one.
    calls = _chain(element, receiver)  # outermost first; the last one is the move
    tails = []
    for call in reversed(calls[:-1]):
        attr = call.func.attr  # type: ignore[attr-defined]
        if attr in ("numpy", "detach"):
            continue
        inner = call.func.value  # type: ignore[attr-defined]
        tail = file.text[file.span(inner)[1] : file.span(call)[1]]
        if not tail.lstrip().startswith("."):
            return None
        tails.append(tail)
    detached = _spine_has(receiver, "detach") or any(_method(c, "detach") for c in calls)
    return base + ("" if detached else ".detach()") + "".join(tails)


def _chain(element: ast.expr, receiver: ast.expr) -> list[ast.Call]:
    calls = []
    current = element
    while isinstance(current, ast.Call) and isinstance(current.func, ast.Attribute):
        if current is receiver:
            break
        calls.append(current)
        if current.func.value is receiver:
            break
        current = current.func.value
    return calls


def _is_atom(node: ast.expr) -> bool:
    return isinstance(
        node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant, ast.List, ast.Tuple)
    )


def _spine_has(node: ast.expr, method: str) -> bool:
    """Whether the chain of calls `node` ends with includes `.method()` (`x.detach().argmax(1)`)."""
    current: ast.AST = node
    while True:
        if _method(current, method):
            return True
        if isinstance(current, ast.Call):
            current = current.func
        elif isinstance(current, (ast.Attribute, ast.Subscript)):
            current = current.value
        else:
            return False


def _bindings(function: ast.AST, name: str) -> list[ast.expr] | None:
    """The values every assignment of local `name` gives it (None: bound otherwise too)."""
    values = []
    for node in ast_walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    values.append(node.value)
                elif any(isinstance(n, ast.Name) and n.id == name for n in ast_walk(target)):
                    return None
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr)):
            targets = [getattr(node, "target", None)] + [
                i.optional_vars for i in getattr(node, "items", [])
            ]
            if any(
                t is not None and any(isinstance(n, ast.Name) and n.id == name for n in ast_walk(t))
                for t in targets
            ):
                if isinstance(node, ast.AnnAssign) and node.value is not None:
                    values.append(node.value)
                    continue
                return None
        elif isinstance(node, ast.arg) and node.arg == name:
            return None
    return values


def _reaching(function: ast.AST, node: ast.Name) -> list[ast.expr] | None:
    """The values local `node` may hold where it is read: when the last assignment of the
    name before the read's statement is a statement of the function's own body and nothing
    between them (or in the read's statement itself) assigns it, that assignment's value;
    else every value the name is assigned (None: bound otherwise too)."""
    values = _bindings(function, node.id)
    if not values:
        return values
    body = list(getattr(function, "body", []))
    statement = next(
        (s for s in body if s.lineno <= node.lineno <= (s.end_lineno or s.lineno)), None
    )
    if statement is None:
        return values
    earlier = [
        s
        for s in body[: body.index(statement)]
        if isinstance(s, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == node.id for t in s.targets)
    ]
    if not earlier:
        return values
    last = earlier[-1]
    between = [
        v
        for v in values
        if v is not last.value
        and last.lineno <= v.lineno <= (statement.end_lineno or statement.lineno)
    ]
    return values if between else [last.value]


def _zero_dim(
    node: ast.expr, function: ast.AST, depth: int = 0, seen: frozenset[str] = frozenset()
) -> bool:
    """Provably one value: a whole-tensor reduction, a functional loss with its default
    reduction, arithmetic of those and numbers, or a local bound only to such values."""
    if depth > 8:
        return False
    node = _strip(node, _SHAPE_KEEPING - {"squeeze", "flatten", "view", "reshape"})
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float))
    if isinstance(node, ast.BinOp):
        return _zero_dim(node.left, function, depth + 1, seen) and _zero_dim(
            node.right, function, depth + 1, seen
        )
    if isinstance(node, ast.UnaryOp):
        return _zero_dim(node.operand, function, depth + 1, seen)
    if isinstance(node, ast.Name):
        if node.id in seen:
            return True  # `loss = loss + ...`: holds if every other binding does
        values = _reaching(function, node)
        return bool(values) and all(
            _zero_dim(v, function, depth + 1, seen | {node.id}) for v in values
        )
    if not isinstance(node, ast.Call):
        return False
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    keywords = {k.arg for k in node.keywords}
    if name in _FUNCTIONAL_LOSSES:
        reduction = next((k.value for k in node.keywords if k.arg == "reduction"), None)
        return reduction is None or (
            isinstance(reduction, ast.Constant) and reduction.value in ("mean", "sum")
        )
    if name in _FULL_REDUCTIONS and not ({"dim", "axis"} & keywords):
        method = isinstance(node.func, ast.Attribute) and not _is_module_call(node.func)
        return len(node.args) == (0 if method else 1)
    return False


def _is_module_call(func: ast.Attribute) -> bool:
    return isinstance(func.value, ast.Name) and func.value.id in ("torch", "th", "F")


def _strip(node: ast.expr, methods: Iterable[str]) -> ast.expr:
    allowed = frozenset(methods)
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in allowed
    ):
        node = node.func.value
    return node


def _small(node: ast.expr, function: ast.AST, depth: int = 0) -> bool:
    """What each step keeps is visibly small: one value, or one prediction per sample (an
    index reduced over the class dimension: `logits.argmax(1)`, `scores.max(dim=1)[1]`)."""
    if depth > 6:
        return False
    if _zero_dim(node, function):
        return True
    node = _strip(node, _SHAPE_KEEPING)
    if isinstance(node, ast.Name):
        values = _bindings(function, node.id)
        return bool(values) and all(_small(v, function, depth + 1) for v in values)
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        module_form = isinstance(func, ast.Attribute) and _is_module_call(func)
        given = len(node.args) - (1 if module_form else 0) > 0 or any(
            k.arg in ("dim", "axis") for k in node.keywords
        )
        return name in _INDEX_REDUCTIONS and given
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call):
        # `scores.max(dim=1)[1]`: the indices (or values) of a reduction over one dimension
        call = node.value
        name = call.func.attr if isinstance(call.func, ast.Attribute) else ""
        dims = len(call.args) > (1 if _is_module_call(call.func) else 0) or any(  # type: ignore[arg-type]
            k.arg == "dim" for k in call.keywords
        )
        return name in ("max", "min") and dims and isinstance(node.slice, ast.Constant)
    if isinstance(node, ast.Attribute) and node.attr in ("indices", "values"):
        return _small(ast.Subscript(node.value, ast.Constant(1)), function, depth + 1)
    return False


# --- the plan ------------------------------------------------------------------------------


def _plan(
    ctx: FileContext, model: ProjectModel, index: AttributeIndex, owner: str, p: _Producer
) -> Deferral:
    p.model = model
    name = _container_text(p)
    kind = model.class_kind(owner)
    if not kind & (ClassKind.LIGHTNING_MODULE | ClassKind.CALLBACK):
        return Deferral(reason=f"`{name}` belongs to a class that is not a Lightning module")
    if p.kind != "number" and not _small(p.receiver, p.file.function_of(p.element)):
        return Deferral(
            reason=f"each step keeps `{p.file.source(p.receiver)}`, which is not visibly small"
            " (one value, or one prediction per sample); on the TPU until the epoch ends it"
            " may not fit"
        )
    accesses = index.accesses(p.attr, {ctx.path: ctx.source})
    if accesses is None:
        return Deferral(reason=f"a file of the project that uses `.{p.attr}` does not parse")
    related = related_classes(model, owner)
    producer_function = p.file.function_of(p.append)
    producer_entry = index.function_entry(p.file.path, producer_function)
    loops = step_loops(model, producer_entry.gkey) if producer_entry else frozenset()
    if not loops:
        return Deferral(reason=f"the loop that fills `{name}` is not known")
    edits = _Edits()
    begin, end = p.file.span(p.element)
    edits.add(p.file, begin, end, p.replacement)
    resets: list[Access] = []
    torch_names: dict[str, str | None] = {}
    for access in accesses:
        if access.through_self and access.owner not in related:
            continue  # the same name on another class: another object
        reason = _access(ctx, model, p, access, edits, resets, torch_names)
        if reason is not None:
            return Deferral(reason=reason)
    reason = _emptied(model, owner, p, loops, resets)
    if reason is not None:
        return Deferral(reason=reason)
    for path, file in edits.files.items():
        if roundtrip.prepare(file.text) is not None:
            return Deferral(reason=f"{os.path.basename(path)} has form feeds in its indentation")
    for path, alias in torch_names.items():
        if alias is None:
            file = edits.files[path]
            offset = _import_offset(file)
            edits.add(file, offset, offset, "import torch\n")
    return Deferral(fix=_fix_spec(ctx, p, edits, loops))


def _container_text(p: _Producer) -> str:
    return p.file.source(p.container)


def _where(access: Access) -> str:
    line = access.node.lineno
    name = access.function.name if access.function is not None else "module level"
    return f"`{name}` ({os.path.basename(access.file.path)}:{line})"


def _container_node(p: _Producer, access: Access) -> ast.expr | bool | None:
    """The container expression at an access: `self.losses`, or `self.metrics["loss"]` for a
    keyed one (None: another key of the same dict; True: the whole dict)."""
    if p.key is None:
        return access.node
    parent = access.file.parent(access.node)
    if isinstance(parent, ast.Subscript) and parent.value is access.node:
        if isinstance(parent.slice, ast.Constant) and isinstance(p.key, ast.Constant):
            return parent if parent.slice.value == p.key.value else None
        return True
    return True


def _access(
    ctx: FileContext,
    model: ProjectModel,
    p: _Producer,
    access: Access,
    edits: _Edits,
    resets: list[Access],
    torch_names: dict[str, str | None],
) -> str | None:
    """Classify one access of the container; add the edit a read needs. A reason when the
    access rules the rewrite out."""
    file = access.file
    container = _container_node(p, access)
    name = _container_text(p)
    if container is None:
        return None
    if container is True:
        return _whole_dict(p, access, resets)
    assert isinstance(container, ast.expr)
    if file.path == p.file.path and container is p.container:
        return None  # the producer itself
    parent = file.parent(container)
    # Writes: emptying, or anything else.
    if _is_reset(file, container):
        resets.append(access)
        return None
    if isinstance(parent, ast.Assign) and container in parent.targets:
        return f"`{name}` is assigned in {_where(access)}"
    if isinstance(parent, (ast.AugAssign, ast.AnnAssign)) and parent.target is container:
        return f"`{name}` is extended in {_where(access)}"
    if isinstance(parent, ast.Delete):
        return f"`{name}` is deleted in {_where(access)}"
    if isinstance(parent, ast.Subscript) and isinstance(parent.ctx, (ast.Store, ast.Del)):
        return f"items of `{name}` are replaced in {_where(access)}"
    if isinstance(parent, ast.Attribute) and parent.attr in _LIST_MUTATORS:
        if parent.attr == "append":
            return f"`{name}` is also filled in {_where(access)}"
        return f"`{name}` is changed (`.{parent.attr}()`) in {_where(access)}"
    if _structural(file, container):
        return None
    phase = phase_of(model, access.gkey)
    if phase.kind == "step":
        return f"`{name}` is read every step, in {_where(access)}"
    if phase.kind == "unknown":
        return (
            f"`{name}` is read in {_where(access)}, which does not run only when an epoch ends"
            " or starts"
        )
    if access.function is None:
        return f"`{name}` is read at {_where(access)}"
    alias = _torch_alias(file)
    local_names = _local_names(access.function)
    if (alias or "torch") in local_names:
        return f"`{alias or 'torch'}` is a local name in {_where(access)}"
    before = len(edits.by_file.get(file.path, []))
    reason = _rewrite_read(p, file, container, alias or "torch", access, edits)
    if reason is None:
        if _where(access) not in edits.readers:
            edits.readers.append(_where(access))
        added = [text for *_, text in edits.by_file.get(file.path, [])][before:]
        if any(f"{alias or 'torch'}." in text for text in added):
            torch_names.setdefault(file.path, alias)
    return reason


def _whole_dict(p: _Producer, access: Access, resets: list[Access]) -> str | None:
    """A keyed container read or written as a whole dict."""
    file = access.file
    parent = file.parent(access.node)
    name = file.source(access.node)
    if isinstance(parent, ast.Assign) and access.node in parent.targets:
        value = parent.value
        if isinstance(value, ast.Dict) and all(
            isinstance(v, ast.List) and not v.elts for v in value.values
        ):
            resets.append(access)
            return None
        if _empty_defaultdict(value):
            resets.append(access)
            return None
        return f"`{name}` is assigned in {_where(access)}"
    if isinstance(parent, ast.Attribute) and parent.attr == "clear":
        return f"`{name}` is cleared whole in {_where(access)}"
    if _structural(file, access.node):
        return None
    return f"`{name}` is read as a whole in {_where(access)}"


def _empty_defaultdict(value: ast.expr) -> bool:
    return (
        isinstance(value, ast.Call)
        and _dotted(value.func, "defaultdict")
        and len(value.args) == 1
        and _dotted(value.args[0], "list")
    )


def _is_reset(file: ParsedFile, container: ast.expr) -> bool:
    """`c.clear()`, `c = []`, `c = list()`, `del c[:]`, `c[:] = []`."""
    parent = file.parent(container)
    if isinstance(parent, ast.Attribute) and parent.attr == "clear":
        call = file.parent(parent)
        return (
            isinstance(call, ast.Call) and not call.args and isinstance(file.parent(call), ast.Expr)
        )
    if isinstance(parent, ast.Assign) and parent.targets == [container]:
        return _empty_list(parent.value)
    if isinstance(parent, ast.AnnAssign) and parent.target is container:
        return parent.value is not None and _empty_list(parent.value)
    if (
        isinstance(parent, ast.Subscript)
        and isinstance(parent.slice, ast.Slice)
        and parent.slice.lower is None
        and parent.slice.upper is None
        and parent.slice.step is None
    ):
        holder = file.parent(parent)
        if isinstance(holder, ast.Delete):
            return True
        if isinstance(holder, ast.Assign) and holder.targets == [parent]:
            return _empty_list(holder.value)
    return False


def _empty_list(value: ast.expr) -> bool:
    return (isinstance(value, ast.List) and not value.elts) or (
        isinstance(value, ast.Call) and _dotted(value.func, "list") and not value.args
    )


def _structural(file: ParsedFile, node: ast.expr) -> bool:
    """A read of the container's size or truth, not of its values."""
    parent = file.parent(node)
    if isinstance(parent, ast.Call) and _dotted(parent.func, "len") and parent.args == [node]:
        return True
    if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and parent.test is node:
        return True
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        return True
    if isinstance(parent, ast.BoolOp):
        holder = file.parent(parent)
        return isinstance(holder, (ast.If, ast.While, ast.IfExp, ast.Assert, ast.UnaryOp))
    return isinstance(parent, ast.Compare) and all(
        isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops
    )


def _torch_alias(file: ParsedFile) -> str | None:
    """The module-level name `torch` is imported as (None: not imported), looking into
    module-level `try`/`if` blocks (`try: import torch except ImportError: ...`)."""
    stack = list(file.tree.body)
    while stack:
        statement = stack.pop(0)
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.name == "torch":
                    return alias.asname or "torch"
        elif isinstance(statement, (ast.If, ast.Try)):
            stack.extend(statement.body)
            stack.extend(statement.orelse)
            stack.extend(getattr(statement, "finalbody", []))
            for handler in getattr(statement, "handlers", []):
                stack.extend(handler.body)
    return None


def _local_names(function: ast.AST) -> set[str]:
    names = set()
    for node in ast_walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def _import_offset(file: ParsedFile) -> int:
    """Where `import torch` goes: after the leading docstring and imports."""
    line = 1
    for position, statement in enumerate(file.tree.body):
        if (
            position == 0
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        ):
            line = (statement.end_lineno or statement.lineno) + 1
            continue
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            line = (statement.end_lineno or statement.lineno) + 1
            continue
        break
    return file.offset(min(line, len(file.lines) + 1), 0) if file.lines else 0


def _rewrite_read(
    p: _Producer,
    file: ParsedFile,
    container: ast.expr,
    torch: str,
    access: Access,
    edits: _Edits,
) -> str | None:
    """The edit that makes one read see what it saw before; a reason when there is none."""
    name = file.source(container)
    parent = file.parent(container)
    if p.kind == "number":
        use = _number_use(file, container, access.function, _Callees(p.model))
        if use is not None:
            return f"`{name}` is {use} in {_where(access)}"
        if (
            isinstance(parent, ast.Subscript)
            and parent.value is container
            and not isinstance(parent.slice, (ast.Slice, ast.Tuple))
        ):
            # One element (`self.losses[-1]`): read that one alone.
            element = f"{file.source(parent)}.item()"
            if p.wrapper is not None:
                element = f"{p.wrapper}({element})"
            begin, end = file.span(parent)
            edits.add(file, begin, end, element)
            return None
        converted = f"{torch}.stack({name}).tolist()"
        if p.wrapper is not None:
            converted = f"[{p.wrapper}(v) for v in {converted}]"
        if not _non_empty(file, container, access.function):
            converted = f"{converted} if {name} else []"
            # Parenthesized unless it stands alone: the sole argument of a call, the value
            # of an assignment or a keyword argument.
            alone = (
                (
                    isinstance(parent, ast.Call)
                    and parent.args == [container]
                    and not parent.keywords
                )
                or (isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is container)
                or isinstance(parent, ast.keyword)
            )
            if not alone:
                converted = f"({converted})"
        begin, end = file.span(container)
        edits.add(file, begin, end, converted)
        return None
    # Tensors: only joined into one tensor (`torch.cat(self.preds)`), which moves once.
    if not (isinstance(parent, ast.Call) and parent.args and parent.args[0] is container):
        return f"`{name}` is read tensor by tensor in {_where(access)}"
    func = parent.func
    join = func.attr if isinstance(func, ast.Attribute) else ""
    owner = func.value if isinstance(func, ast.Attribute) else None
    if p.kind == "tensor":
        if not (join in _TORCH_JOINS and isinstance(owner, ast.Name) and owner.id == torch):
            return f"`{name}` is read tensor by tensor in {_where(access)}"
        holder = file.parent(parent)
        if isinstance(holder, ast.Attribute) and holder.attr == "cpu":
            return None  # `torch.cat(self.preds).cpu()` already moves the result
        end = file.span(parent)[1]
        edits.add(file, end, end, ".cpu()")
        return None
    # numpy arrays: `np.concatenate(self.preds, axis=0)` -> `torch.cat(...).cpu().numpy()`
    if not (join in _NUMPY_JOINS and isinstance(owner, ast.Name) and owner.id in ("np", "numpy")):
        return f"`{name}` is read array by array in {_where(access)}"
    if len(parent.args) != 1 or any(k.arg != "axis" for k in parent.keywords):
        return f"`{name}` is joined with options in {_where(access)}"
    if join not in ("concatenate", "stack") and parent.keywords:
        return f"`{name}` is joined with options in {_where(access)}"
    axis = next((k.value for k in parent.keywords), None)
    if isinstance(axis, ast.Constant) and axis.value is None:
        return f"`{name}` is flattened in {_where(access)}"
    dim = f", dim={file.source(axis)}" if axis is not None else ""
    begin, end = file.span(parent)
    edits.add(file, begin, end, f"{torch}.{_NUMPY_JOINS[join]}({name}{dim}).cpu().numpy()")
    return None


class _Callees:
    """Project functions a list is passed to, followed to see that they only read it."""

    def __init__(self, model: ProjectModel | None) -> None:
        self.model = model
        self.depth = 0

    def reads_only(self, file: ParsedFile, call: ast.Call, argument: ast.AST) -> bool:
        """Whether the project function `call` calls only reads the parameter `argument` is
        passed as (aggregates it, iterates it, passes it on to such functions)."""
        if self.model is None or self.depth > 3:
            return False
        found = self._callee(file, call)
        if found is None:
            return False
        callee_file, function, bound = found
        params = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        name = None
        if isinstance(argument, ast.keyword):
            name = argument.arg
        elif argument in call.args:
            index = call.args.index(argument) + (1 if bound else 0)
            name = params[index] if index < len(params) else None
        if name is None or name not in params:
            return False
        loads, stores = _uses(function, name)
        if len(stores) != 1:  # the parameter itself, never rebound
            return False
        self.depth += 1
        try:
            return all(_number_use(callee_file, load, function, self) is None for load in loads)
        finally:
            self.depth -= 1

    def _callee(self, file: ParsedFile, call: ast.Call):
        model = self.model
        assert model is not None
        module = model.module_at(file.path)
        if module is None:
            return None
        func = call.func
        target = None
        bound = False
        if isinstance(func, ast.Name):
            target = module.imports.get(func.id, f".{func.id}")
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in module.imports
        ):
            target = f"{module.imports[func.value.id]}.{func.attr}"
        if target is None:
            return None
        found = model.lookup(target, module)
        from tpulint.analysis.project import _Function

        if not isinstance(found, _Function) or found.summary.cls is not None:
            return None  # module-level functions only: a method may be overridden
        index = attribute_index(model)
        callee_file = index.file(found.module.path)
        node = access_function_node(model, found)
        if callee_file is None or node is None:
            return None
        if node.args.vararg or node.args.kwarg:
            return None
        return callee_file, node, bound


def _number_use(
    file: ParsedFile, node: ast.expr, function: ast.AST | None, callees: _Callees | None = None
) -> str | None:
    """None when a read of the list of numbers may get a converted copy instead: it is only
    read (aggregated, iterated, indexed, printed, passed to a project function that only
    reads it); else how it is used."""
    parent = file.parent(node)
    argument: ast.AST = node
    if isinstance(parent, ast.keyword):
        argument = parent
        parent = file.parent(parent)
    if isinstance(parent, ast.Starred):
        parent = file.parent(parent)
    if isinstance(parent, ast.Call) and parent.func is not node:
        func = parent.func
        if isinstance(func, ast.Name) and func.id in _READING_BUILTINS:
            return None
        if isinstance(func, ast.Attribute):
            root = func
            while isinstance(root, ast.Attribute):
                root = root.value  # type: ignore[assignment]
            if isinstance(root, ast.Name) and root.id in _READING_MODULES:
                return None
            if func.attr in _LOGGING_METHODS:
                return None
        if callees is not None and callees.reads_only(file, parent, argument):
            return None
        callee = file.source(func)
        return f"passed to `{callee}`"
    if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
        return None
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return None
    if isinstance(parent, (ast.BinOp, ast.Compare, ast.FormattedValue)):
        return None
    if isinstance(parent, ast.Attribute) and parent.attr in _LIST_READERS:
        return None
    if (
        isinstance(parent, ast.Assign)
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Name)
        and function is not None
    ):
        local = parent.targets[0].id
        loads, _ = _uses(function, local)
        for load in loads:
            holder = file.parent(load)
            if isinstance(holder, ast.Attribute) and holder.attr in _LIST_MUTATORS | {"clear"}:
                return f"changed through `{local}`"
            if isinstance(holder, (ast.Subscript,)) and isinstance(
                holder.ctx, (ast.Store, ast.Del)
            ):
                return f"changed through `{local}`"
            if isinstance(holder, ast.AugAssign) and holder.target is load:
                return f"changed through `{local}`"
        return None
    if isinstance(parent, ast.Return):
        return "returned"
    return "kept"


def _non_empty(file: ParsedFile, node: ast.expr, function: ast.AST | None) -> bool:
    """Whether the read runs only when the container is not empty: under `if c:` /
    `if len(c) > 0:`, or after `if not c: return` at the top of the function."""
    text = ast.dump(node)

    def tests_non_empty(test: ast.expr) -> bool:
        if ast.dump(test) == text:
            return True
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return any(tests_non_empty(v) for v in test.values)
        if isinstance(test, ast.Call) and _dotted(test.func, "len") and test.args:
            return ast.dump(test.args[0]) == text
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, op, right = test.left, test.ops[0], test.comparators[0]
            is_len = (
                isinstance(left, ast.Call)
                and _dotted(left.func, "len")
                and left.args
                and ast.dump(left.args[0]) == text
            )
            if is_len and isinstance(right, ast.Constant):
                return (isinstance(op, ast.Gt) and right.value == 0) or (
                    isinstance(op, (ast.NotEq, ast.GtE)) and right.value in (0, 1)
                )
        return False

    def tests_empty(test: ast.expr) -> bool:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return tests_non_empty(test.operand)
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            return any(tests_empty(v) for v in test.values)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, right = test.left, test.comparators[0]
            return (
                isinstance(test.ops[0], ast.Eq)
                and isinstance(left, ast.Call)
                and _dotted(left.func, "len")
                and bool(left.args)
                and ast.dump(left.args[0]) == text
                and isinstance(right, ast.Constant)
                and right.value == 0
            )
        return False

    child: ast.AST = node
    for ancestor in file.ancestors(node):
        inside = (isinstance(ancestor, (ast.If, ast.While)) and child in ancestor.body) or (
            isinstance(ancestor, ast.IfExp) and child is ancestor.body
        )
        if inside and tests_non_empty(ancestor.test):  # type: ignore[attr-defined]
            return True
        if ancestor is function:
            break
        child = ancestor
    if function is None:
        return False
    statement = file.statement_of(node)
    top = statement
    while top is not None and file.parent(top) is not function:
        top = file.parent(top)  # type: ignore[assignment]
    for earlier in function.body:  # type: ignore[attr-defined]
        if earlier is top:
            break
        if (
            isinstance(earlier, ast.If)
            and tests_empty(earlier.test)
            and earlier.body
            and isinstance(earlier.body[-1], (ast.Return, ast.Raise))
        ):
            return True
    return False


# --- emptied when the epoch ends -----------------------------------------------------------


def _emptied(
    model: ProjectModel, owner: str, p: _Producer, loops: frozenset[str], resets: list[Access]
) -> str | None:
    """A reason unless, for every loop whose steps fill the container, each class that may be
    instantiated (the owner and its subclasses) empties it unconditionally in one of that
    loop's epoch-end hooks."""
    name = _container_text(p)
    by_function: dict[str, list[Access]] = {}
    for access in resets:
        if access.gkey is not None and access.through_self:
            by_function.setdefault(access.gkey, []).append(access)
    classes = [owner, *model.subclasses(owner)]
    producer = p.file.function_of(p.append)
    entry = attribute_index(model).function_entry(p.file.path, producer)
    if producer is not None and entry is not None:
        # A subclass that overrides the producing method without calling it never fills
        # the container: it need not empty it.
        classes = [c for c in classes if _runs_producer(model, c, entry.gkey, producer.name)]
    for loop in sorted(loops):
        hooks = EPOCH_END_HOOKS.get(loop)
        if not hooks:
            return f"`{name}` is filled in the {loop} loop, which has no epoch end"
        for cls in classes:
            if not any(_empties(model, cls, hook, by_function) for hook in hooks):
                where = " or ".join(f"`{h}`" for h in hooks[:2])
                return (
                    f"`{name}` is not emptied when the {loop} epoch ends ({where} of"
                    f" `{cls.rsplit('.', 1)[-1]}`): its values would stay on the TPU between"
                    " epochs"
                )
    return None


def _runs_producer(model: ProjectModel, cls: str, gkey: str, name: str) -> bool:
    fn = model.find_method(cls, name)
    if fn is None:
        return False
    if fn.gkey == gkey:
        return True
    node = access_function_node(model, fn)
    if node is None:
        return True
    for inner in ast_walk(node):
        if (
            _method(inner, name)
            and isinstance(inner.func.value, ast.Call)  # type: ignore[attr-defined]
            and _dotted(inner.func.value.func, "super")  # type: ignore[attr-defined]
        ):
            return True
    return False


def _empties(
    model: ProjectModel, cls: str, hook: str, by_function: dict[str, list[Access]], depth: int = 0
) -> bool:
    """Whether `hook`, as `cls` resolves it, empties the container on every path (directly,
    or through an unconditional `super().hook()` whose method does)."""
    if depth > 8:
        return False
    fn = model.find_method(cls, hook)
    if fn is None:
        return False
    for access in by_function.get(fn.gkey, []):
        if _unconditional(access):
            return True
    # `super().on_validation_epoch_end()` at the top of the body: the base's hook runs too.
    if fn.owner is None:
        return False
    node = access_function_node(model, fn)
    if node is None:
        return False
    for statement in node.body:
        if (
            isinstance(statement, ast.Expr)
            and _method(statement.value, hook)
            and isinstance(statement.value.func.value, ast.Call)  # type: ignore[attr-defined]
            and _dotted(statement.value.func.value.func, "super")  # type: ignore[attr-defined]
        ):
            mro = model.mro(cls)
            if fn.owner in mro:
                for base in mro[mro.index(fn.owner) + 1 :]:
                    cls_entry = model.classes.get(base)
                    if cls_entry is not None and hook in cls_entry.summary.methods:
                        return _empties(model, base, hook, by_function, depth + 1)
            return False
    return False


def access_function_node(model: ProjectModel, fn) -> ast.FunctionDef | None:
    """The ast definition of a project-model function."""
    index = attribute_index(model)
    file = index.file(fn.module.path)
    if file is None:
        return None
    for node in ast_walk(file.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            node.lineno == fn.summary.line and node.name == fn.summary.name
        ):
            return node  # type: ignore[return-value]
    return None


def _unconditional(access: Access) -> bool:
    """The reset is a statement of the function's own body, and no earlier statement may
    leave the function (except a return under `if not <container>:`, which leaves it empty
    anyway)."""
    function = access.function
    file = access.file
    statement = file.statement_of(access.node)
    if function is None or statement is None or file.parent(statement) is not function:
        return False
    for earlier in function.body:
        if earlier is statement:
            return True
        exits = [
            n for n in ast_walk(earlier) if isinstance(n, (ast.Return, ast.Raise, ast.Continue))
        ]
        if exits:
            test = earlier.test if isinstance(earlier, ast.If) else None
            if test is None or not _empty_test(test, access):
                return False
    return False


def _empty_test(test: ast.expr, access: Access) -> bool:
    """`not self.preds` / `len(self.preds) == 0` (on the container being reset)."""
    text = ast.dump(_reset_target(access))
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return ast.dump(test.operand) == text
    if isinstance(test, ast.Compare) and isinstance(test.left, ast.Call):
        return (
            _dotted(test.left.func, "len")
            and bool(test.left.args)
            and ast.dump(test.left.args[0]) == text
            and isinstance(test.ops[0], ast.Eq)
        )
    return False


def _reset_target(access: Access) -> ast.expr:
    parent = access.file.parent(access.node)
    if isinstance(parent, ast.Subscript) and parent.value is access.node:
        return parent
    return access.node


# --- the fix -------------------------------------------------------------------------------


def _fix_spec(ctx: FileContext, p: _Producer, edits: _Edits, loops: frozenset[str]) -> FixSpec:
    files = []
    for path, spans in edits.by_file.items():
        file = edits.files[path]
        converted = tuple(
            Edit(file.location(begin), file.location(end), text)
            for begin, end, text in sorted(spans)
        )
        digest = hashlib.sha1(file.text.encode("utf-8")).hexdigest()
        files.append(FileEdits(ctx.path if path == p.file.path else path, converted, digest))
    name = _container_text(p)
    what = {
        "number": "one number per step",
        "tensor": "one small tensor per step",
        "array": "one small tensor per step",
    }[p.kind]
    read = {
        "number": "`torch.stack(...).tolist()`",
        "tensor": "`torch.cat(...).cpu()`",
        "array": "`torch.cat(...).cpu().numpy()`",
    }[p.kind]
    readers = "; ".join(edits.readers[:3]) + ("; ..." if len(edits.readers) > 3 else "")
    where = f" ({readers})" if readers else ""
    message = (
        f"Keep the values on the TPU until the epoch ends: collect `{p.replacement}` in"
        f" `{name}`, and read them once where the epoch-end code uses them{where} with {read};"
        f" {what} stays on the device until `{name}` is emptied"
    )
    return FixSpec(Applicability.UNSAFE, message, [], text_edits=tuple(files))
