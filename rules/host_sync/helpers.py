"""What several host-sync rules (TPU1xx) share: the head of their examples, the value logged
by `self.log` (TPU101, TPU102, TPU103), when a finding stays quiet (guards, device checks), and
the statement that holds a call (TPU105, TPU107), what a loop variable iterates (TPU103,
TPU104)."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import FileContext, get_arg

from ..shared.matchers import is_log_call

_HEAD = "import lightning as L\nimport torch\n\n\nclass Model(L.LightningModule):\n"
_LOSS = "        loss = self.loss_fn(self(batch))\n"


def _conversion_arg(node: cst.CSTNode) -> cst.BaseExpression | None:
    """For `float(x)` / `int(x)`: `x`; else None."""
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value in ("float", "int")
        and len(node.args) == 1
        and node.args[0].keyword is None
        and not node.args[0].star
    ):
        return node.args[0].value
    return None


def logged_value(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Whether `node` (an `.item()` call or a conversion) is the value passed to
    `self.log(name, value)` or a value of the dict literal passed to `self.log_dict(...)`,
    possibly wrapped in `float(...)`/`int(...)`."""
    current = node
    parent = ctx.parent(current)
    # float(x.item()) -> climb to the float() call
    if isinstance(parent, cst.Arg):
        grand = ctx.parent(parent)
        if grand is not None and _conversion_arg(grand) is current:
            current = grand
            parent = ctx.parent(current)
    if isinstance(parent, cst.Arg):
        call = ctx.parent(parent)
        if isinstance(call, cst.Call) and is_log_call(call) == "log":
            return get_arg(call, "value", 1) is parent
        return False
    if isinstance(parent, cst.DictElement) and parent.value is current:
        dict_node = ctx.parent(parent)
        arg = ctx.parent(dict_node) if dict_node is not None else None
        call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
        if isinstance(call, cst.Call) and is_log_call(call) == "log_dict":
            return get_arg(call, "dictionary", 0) is arg
    return False


def quiet(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Under a "rare" guard (first batch, logging flags) or a CUDA/device check."""
    guards = ctx.guards(node)
    return "rare" in guards or "device-check" in guards


def _statement_of_call(ctx: FileContext, node: cst.Call) -> cst.CSTNode | None:
    """The statement to delete for a call used as a statement of its own, else None."""
    expr = ctx.parent(node)
    if not isinstance(expr, cst.Expr):
        return None
    line = ctx.parent(expr)
    if isinstance(line, cst.SimpleStatementLine):
        return line if len(line.body) == 1 else expr
    return None


def in_exception_path(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Inside `raise ...(f"...")` or an assert message: only evaluated on failure."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Raise):
            return True
        if isinstance(ancestor, cst.Assert):
            return child is ancestor.msg
        if isinstance(ancestor, (cst.FunctionDef, cst.SimpleStatementLine)):
            return False
        child = ancestor
    return False


def iterated_tensor(loop: cst.For, name: str) -> cst.BaseExpression | None:
    """What `name` is an element of in `for name in x` or `for i, name in enumerate(x)`."""
    target, iterated = loop.target, loop.iter
    if isinstance(target, cst.Name):
        return iterated if target.value == name else None
    if (
        isinstance(target, (cst.Tuple, cst.List))
        and len(target.elements) == 2
        and isinstance(target.elements[1].value, cst.Name)
        and target.elements[1].value.value == name
        and isinstance(iterated, cst.Call)
        and isinstance(iterated.func, cst.Name)
        and iterated.func.value == "enumerate"
        and iterated.args
        and iterated.args[0].keyword is None
    ):
        return iterated.args[0].value
    return None
