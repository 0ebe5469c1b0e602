"""Rewrites of host syncs in the step (TPU101, TPU103, TPU104).

    self.task.log_dict({"acc": acc.item()})        self.task.log_dict({"acc": acc.detach()})
    return {"loss": loss, "acc": acc.item()}        return {"loss": loss, "acc": acc.detach()}
    print(loss)                                     (removed)
    if loss > 10:                                   loss = torch.where(loss > 10, loss / 10, loss)
        loss = loss / 10

`.detach()` keeps the value and drops the graph, as `.item()` did, without reading it back:
the value stays a 0-dim tensor on the device (float32 where `.item()` gave a Python float).
`torch.where` evaluates both branches and picks per element; both are computed every step, so
the branch must be pure (no module calls, no random draws, no in-place updates).
"""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.imports import dotted_name
from tpulint.analysis.values import DEVICE
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.rule import FixSpec, ImportSpec

from ..shared.tensors import Bindings
from .expressions import atom, bare, complete_parents, expression, torch_alias
from .flow import FunctionIndex, function_index
from .purity import is_pure
from .shapes import _ELEMENTWISE_METHODS, _SCALAR, _combine, shape_key, zero_dim

_ARITHMETIC = (
    cst.Add,
    cst.Subtract,
    cst.Multiply,
    cst.Divide,
    cst.FloorDivide,
    cst.Modulo,
    cst.Power,
)
_ACCUMULATING = (
    cst.AddAssign,
    cst.SubtractAssign,
    cst.MultiplyAssign,
    cst.DivideAssign,
)


def _is_call_of(node: cst.CSTNode | None, method: str) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == method
    )


def _sink(
    ctx: FileContext, index: FunctionIndex, node: cst.BaseExpression, depth: int = 0
) -> str | None:
    """Where the value of `node` ends up, climbing through arithmetic: "tensor" (an operand
    of arithmetic with a device tensor: the result is that tensor either way), "output" (a
    value of the dict a step returns, of a dict or value given to `.log` / `.log_dict`),
    through locals whose every later read goes to one of those; else None.

    A number kept in module state (`self.avg = ... + x.item()`, `self.losses.append(...)`)
    has no rewrite here: the state would hold a tensor where it held a float, for whatever
    reads it. The values a step collects for the end of the epoch are deferred with their
    readers (rewrite/deferral.py)."""
    current: cst.CSTNode = node
    with_tensor = False
    while True:
        parent = index.parent(current)
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, _ARITHMETIC):
            other = parent.right if parent.left is current else parent.left
            if depth == 0 and ctx.value_kind(other) is DEVICE:
                with_tensor = True
            current = parent
            continue
        if isinstance(parent, cst.UnaryOperation) and isinstance(
            parent.operator, (cst.Minus, cst.Plus)
        ):
            current = parent
            continue
        break
    if with_tensor:
        return "tensor"
    if isinstance(parent, cst.Assign) and parent.value is current and len(parent.targets) == 1:
        target = parent.targets[0].target
        if isinstance(target, cst.Name) and depth < 2:
            return _local_sink(ctx, index, target.value, parent, depth)
        return None
    if (
        isinstance(parent, cst.AugAssign)
        and parent.value is current
        and isinstance(parent.operator, _ACCUMULATING)
        and depth == 0
        and ctx.value_kind(parent.target) is DEVICE
    ):
        return "tensor"  # `self.total += x.item()` on a device tensor: a tensor either way
    if isinstance(parent, cst.Arg) and parent.keyword is None:
        call = index.parent(parent)
        if _log_call_value(call, parent):
            return "output"
        return None
    if isinstance(parent, cst.Arg) and parent.keyword is not None:
        call = index.parent(parent)
        if _is_call_of(call, "log") and parent.keyword.value == "value":
            return "output"
        return None
    if isinstance(parent, cst.DictElement) and parent.value is current:
        holder = index.parent(parent)
        return "output" if isinstance(holder, cst.Dict) and _dict_logged(index, holder) else None
    return None


def _log_call_value(call: cst.CSTNode | None, arg: cst.Arg) -> bool:
    """`<anything>.log(name, value)`: the value argument."""
    return (
        _is_call_of(call, "log")
        and len(call.args) >= 2  # type: ignore[union-attr]
        and call.args[1] is arg  # type: ignore[union-attr]
    )


def _local_sink(
    ctx: FileContext, index: FunctionIndex, name: str, assign: cst.Assign, depth: int
) -> str | None:
    reads = index.reads_after(name, assign)
    if not reads:
        return None
    kinds = {_sink(ctx, index, read, depth + 1) for read in reads}
    if None in kinds:
        return None
    return "output"


def _dict_logged(index: FunctionIndex, node: cst.Dict) -> bool:
    """A dict literal that is returned, logged with `.log_dict`, or merged (`.update`) into,
    or bound to, a local dict whose only uses are those."""
    parent = index.parent(node)
    if isinstance(parent, cst.Return):
        return True
    if isinstance(parent, cst.Arg):
        call = index.parent(parent)
        if _is_call_of(call, "log_dict"):
            return True
        if _is_call_of(call, "update") and isinstance(call.func.value, cst.Name):  # type: ignore[union-attr]
            local = call.func.value.value  # type: ignore[union-attr]
            binding = _binding_statement(index, call, local)
            return binding is not None and _dict_local_logged(index, local, binding)
        return False
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        target = parent.targets[0].target
        if isinstance(target, cst.Name):
            return _dict_local_logged(index, target.value, parent)
    return False


def _binding_statement(index: FunctionIndex, use: cst.CSTNode, name: str) -> cst.Assign | None:
    """The last `name = {...}` before `use`."""
    position = index.position.get(id(use), 0)
    for node in reversed(index.order[:position]):
        if (
            isinstance(node, cst.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and node.targets[0].target.value == name
        ):
            return node if isinstance(node.value, cst.Dict) else None
    return None


def _dict_local_logged(index: FunctionIndex, name: str, assign: cst.Assign) -> bool:
    reads = index.reads_after(name, assign)
    if not reads:
        return False
    logged = False
    for read in reads:
        holder = index.parent(read)
        if isinstance(holder, cst.Arg):
            if not _is_call_of(index.parent(holder), "log_dict"):
                return False
            logged = True
        elif isinstance(holder, cst.Attribute) and holder.value is read:
            if holder.attr.value != "update" or not _is_call_of(index.parent(holder), "update"):
                return False
        else:
            return False
    return logged


_OTHER_ARRAY_LIBRARIES = ("mlx", "jax", "tensorflow", "cupy")


def _uses_other_arrays(ctx: FileContext) -> bool:
    """Whether the current function reads a name bound to another array library's module
    (`mx.eval(...)`): its `.item()` may be on one of those arrays."""
    info = ctx.function
    if info is None:
        return False
    cache = ctx.shared.setdefault("rewrite_other_arrays", {})
    found = cache.get(id(info.node))
    if found is None:
        from ..shared.matchers import walk

        others = {
            local
            for local, target in ctx.aliases.bindings.items()
            if target.split(".", 1)[0] in _OTHER_ARRAY_LIBRARIES
        }
        found = bool(others) and any(
            isinstance(n, cst.Name) and n.value in others for n in walk(info.node)
        )
        cache[id(info.node)] = found
    return found


def item_fix(ctx: FileContext, node: cst.Call) -> FixSpec | None:
    """`x.item()` -> `x.detach()` where the number is only handed to Lightning (step outputs,
    logging calls) or combined with a device tensor."""
    complete_parents(ctx, node)
    if not (isinstance(node.func, cst.Attribute) and not node.args):
        return None
    if _uses_other_arrays(ctx):
        return None  # an MLX or JAX array has `.item()` but no `.detach()`
    index = function_index(ctx)
    sink = _sink(ctx, index, node) if index is not None else None
    if sink is None:
        return None
    receiver = node.func.value
    if _is_call_of(receiver, "detach") and not receiver.args:  # type: ignore[union-attr]
        replaced: cst.BaseExpression = receiver  # `loss.detach().item()`: the detach is there
    else:
        replaced = node.with_changes(func=node.func.with_changes(attr=cst.Name("detach")))
    if sink == "tensor":
        title = (
            "Keep the value on the device: `.detach()` instead of `.item()` (the same number, as"
            " a 0-dim tensor, in arithmetic with a tensor)"
        )
    else:
        title = (
            "Keep the value on the device: `.detach()` instead of `.item()` (assumes the value"
            " is only used as a number: it goes to logging or the step's outputs, and"
            " Lightning and torchmetrics take tensors)"
        )
    return FixSpec(Applicability.UNSAFE, title, [(node, replaced)])


def print_fix(ctx: FileContext, call: cst.Call) -> FixSpec | None:
    """Remove a `print(...)` statement that formats a device tensor every step."""
    complete_parents(ctx, call)
    expr = ctx.parent(call)
    if not isinstance(expr, cst.Expr) or expr.value is not call:
        return None
    line = ctx.parent(expr)
    if not isinstance(line, cst.SimpleStatementLine):
        return None
    target: cst.CSTNode = line if len(line.body) == 1 else expr
    if target is line:
        # `if loss > 10: print(loss)`: the branch only printed; without the print the test
        # would be a sync for nothing, so the whole `if` goes (its test is pure).
        block = ctx.parent(line)
        branch = ctx.parent(block) if block is not None else None
        if (
            isinstance(block, cst.IndentedBlock)
            and len(block.body) == 1
            and isinstance(branch, cst.If)
            and branch.orelse is None
            and is_pure(ctx, branch.test)
            and isinstance(ctx.parent(branch), cst.IndentedBlock | cst.Module)
        ):
            target = branch
    return FixSpec(
        Applicability.UNSAFE,
        "Remove the `print` (it reads the tensor back every step; log it with `self.log`, or"
        " print it in an epoch-end hook)",
        [(target, cst.RemovalSentinel.REMOVE)],
    )


def enclosing_print(ctx: FileContext, node: cst.CSTNode) -> cst.Call | None:
    """The `print(...)` call an f-string expression is an argument of."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Call):
            func = ancestor.func
            if (
                isinstance(func, cst.Name)
                and func.value == "print"
                and "print" not in ctx.aliases.bindings
            ):
                return ancestor
            return None
        if isinstance(ancestor, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return None
    return None


# --- `if tensor_cond:` around a pure update ---------------------------------------------


def _condition(ctx: FileContext, test: cst.BaseExpression, torch_name: str) -> str | None:
    """The test as a tensor expression (`not a` -> `torch.logical_not(a)`, `a and b` ->
    `torch.logical_and(a, b)`), when every part of it is a device tensor value."""
    if isinstance(test, cst.BooleanOperation):
        left = _condition(ctx, test.left, torch_name)
        right = _condition(ctx, test.right, torch_name)
        if left is None or right is None:
            return None
        op = "logical_and" if isinstance(test.operator, cst.And) else "logical_or"
        return f"{torch_name}.{op}({left}, {right})"
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _condition(ctx, test.expression, torch_name)
        return None if inner is None else f"{torch_name}.logical_not({inner})"
    if ctx.value_kind(test) is not DEVICE or not is_pure(ctx, test):
        return None
    return bare(ctx, test)


def _updates(block: cst.BaseSuite) -> list[cst.Assign | cst.AugAssign] | None:
    """The statements of a block, when each is one assignment to a name or an attribute."""
    if not isinstance(block, cst.IndentedBlock):
        return None
    found: list[cst.Assign | cst.AugAssign] = []
    for statement in block.body:
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        small = statement.body[0]
        if isinstance(small, cst.Assign):
            if len(small.targets) != 1 or not isinstance(
                small.targets[0].target, (cst.Name, cst.Attribute)
            ):
                return None
        elif isinstance(small, cst.AugAssign):
            if not isinstance(small.target, (cst.Name, cst.Attribute)) or not isinstance(
                small.operator, _ACCUMULATING
            ):
                return None
        else:
            return None
        found.append(small)
    return found or None


_AUG_OPERATORS = {
    cst.AddAssign: "+",
    cst.SubtractAssign: "-",
    cst.MultiplyAssign: "*",
    cst.DivideAssign: "/",
}


def _target_and_value(
    ctx: FileContext, update: cst.Assign | cst.AugAssign
) -> tuple[cst.BaseExpression, str]:
    if isinstance(update, cst.Assign):
        return update.targets[0].target, bare(ctx, update.value)
    target = update.target
    operator = _AUG_OPERATORS[type(update.operator)]
    return target, f"{bare(ctx, target)} {operator} {atom(ctx, update.value)}"


def _names(node: cst.CSTNode) -> set[str]:
    """Every dotted name read in `node` (`self.loss.mean()` reads `self` and `self.loss`)."""
    from ..shared.matchers import walk

    found = set()
    for inner in walk(node):
        if isinstance(inner, (cst.Name, cst.Attribute)):
            dotted = dotted_name(inner)
            if dotted is not None:
                found.add(dotted)
    return found


def _shape(
    ctx: FileContext, bindings: Bindings, node: cst.BaseExpression, depth: int = 0
) -> str | None:
    """A key naming `node`'s shape (shape_key's, plus single values and integer indexing of
    one tensor: `t[0]` and `t[1]` have the same shape); None when not provable."""
    if depth > 10:
        return None
    d = depth + 1
    if zero_dim(ctx, node, bindings):
        return _SCALAR
    if isinstance(node, cst.BinaryOperation) and not isinstance(node.operator, cst.MatrixMultiply):
        return _combine(_shape(ctx, bindings, node.left, d), _shape(ctx, bindings, node.right, d))
    if isinstance(node, cst.UnaryOperation) and not isinstance(node.operator, cst.Not):
        return _shape(ctx, bindings, node.expression, d)
    if isinstance(node, cst.Subscript) and all(
        isinstance(e.slice, cst.Index) and _integer(e.slice.value) for e in node.slice
    ):
        base = _shape(ctx, bindings, node.value, d)
        return None if base in (None, _SCALAR) else f"{base}[{len(node.slice)}]"
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in _ELEMENTWISE_METHODS
        and all(a.keyword is not None or zero_dim(ctx, a.value, bindings) for a in node.args)
    ):
        base = _shape(ctx, bindings, node.func.value, d)
        if base not in (None, _SCALAR):
            return base
    return shape_key(ctx, node, bindings)


def _integer(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, cst.Integer)


def _new_shape(
    ctx: FileContext, bindings: Bindings, update: cst.Assign | cst.AugAssign
) -> str | None:
    """The shape of the value an update assigns (`x += a`: of `x + a`)."""
    if isinstance(update, cst.Assign):
        return _shape(ctx, bindings, update.value)
    return _combine(_shape(ctx, bindings, update.target), _shape(ctx, bindings, update.value))


def _bound_before(bindings: Bindings, target: cst.BaseExpression) -> bool:
    if isinstance(target, cst.Attribute):
        return True  # module state: set in __init__ or an earlier step
    assert isinstance(target, cst.Name)
    return bindings.lookup(target.value) is not None or bindings.is_param(target.value)


def if_fix(ctx: FileContext, bindings: Bindings, node: cst.If) -> FixSpec | None:
    """`if cond: x = a [else: x = b]` -> `x = torch.where(cond, a, x or b)`."""
    complete_parents(ctx, node)
    if not isinstance(ctx.parent(node), (cst.IndentedBlock, cst.Module)):
        return None  # an `elif` branch: the chain is not one choice
    torch_name, needs_import = torch_alias(ctx)
    condition = _condition(ctx, node.test, torch_name)
    if condition is None:
        return None
    body = _updates(node.body)
    if body is None:
        return None
    otherwise: list[cst.Assign | cst.AugAssign] = []
    if node.orelse is not None:
        if not isinstance(node.orelse, cst.Else):
            return None  # elif chains
        found = _updates(node.orelse.body)
        if found is None:
            return None
        otherwise = found
    for update in [*body, *otherwise]:
        if not is_pure(ctx, update.value):
            return None
    # `torch.where` gives one shape whichever way the condition goes: only updates that
    # provably keep the shape (`x = x / 2`, `x = x.clamp(...)`, single values) are exact;
    # `x = x[:, :n]` or `x = x.sum()` would raise or broadcast.
    if otherwise:
        if len(body) == 1 and len(otherwise) == 1:
            then_shape = _new_shape(ctx, bindings, body[0])
            if then_shape is None or then_shape != _new_shape(ctx, bindings, otherwise[0]):
                return None
    else:
        for update in body:
            target = update.targets[0].target if isinstance(update, cst.Assign) else update.target
            kept = _shape(ctx, bindings, target)
            if kept is None or kept != _new_shape(ctx, bindings, update):
                return None
    texts: list[str] = []
    if otherwise:
        # Only the plain two-way choice of one target: `x = a` / `x = b`.
        if len(body) != 1 or len(otherwise) != 1:
            return None
        (target, then_value), (other, else_value) = (
            _target_and_value(ctx, body[0]),
            _target_and_value(ctx, otherwise[0]),
        )
        if bare(ctx, target).strip() != bare(ctx, other).strip():
            return None
        augmented = isinstance(body[0], cst.AugAssign) or isinstance(otherwise[0], cst.AugAssign)
        if augmented and not _bound_before(bindings, target):
            return None
        texts.append(
            f"{bare(ctx, target)} = {torch_name}.where({condition}, {then_value}, {else_value})"
        )
    else:
        read = _names(node.test)
        for update in body[:-1]:
            target = update.targets[0].target if isinstance(update, cst.Assign) else update.target
            if dotted_name(target) in read:
                return None  # the condition would be evaluated on the updated value
        for update in body:
            target, value = _target_and_value(ctx, update)
            if not _bound_before(bindings, target):
                return None  # no value to keep when the condition is false
            texts.append(
                f"{bare(ctx, target)} = {torch_name}.where({condition}, {value}, "
                f"{bare(ctx, target)})"
            )
    statements = [cst.parse_statement(text + "\n") for text in texts]
    statements[0] = statements[0].with_changes(leading_lines=node.leading_lines)
    return FixSpec(
        Applicability.UNSAFE,
        "Choose with `torch.where` instead of branching (assumes the assigned values are tensors"
        " or numbers and are finite when the condition is false: both branches are computed)",
        [(node, cst.FlattenSentinel(statements))],
        add_imports=(ImportSpec("torch"),) if needs_import else (),
    )


__all__ = ["enclosing_print", "expression", "if_fix", "item_fix", "print_fix"]
