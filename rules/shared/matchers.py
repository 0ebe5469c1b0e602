"""Matchers shared by several rules: Lightning Trainer calls, `self.log`, literals."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.project import LIGHTNING_ROOTS
from tpulint.analysis.walker import iter_children

LEGACY_TPU_KEYWORDS = ("tpu_cores", "num_tpu_cores")


def is_trainer_call(ctx: FileContext, call: cst.Call) -> bool:
    """`Trainer(...)`, `pl.Trainer(...)`, `L.Trainer(...)`, `Trainer.from_argparse_args(...)`
    for the Lightning Trainer, through the file's imports."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "from_argparse_args":
        func = func.value
    qualified = ctx.qualify(func)
    if qualified is None:
        return False
    root, _, _ = qualified.partition(".")
    return root in LIGHTNING_ROOTS and qualified.rsplit(".", 1)[-1] == "Trainer"


def contains_trainer_call(ctx: FileContext, root: cst.CSTNode) -> bool:
    return any(isinstance(node, cst.Call) and is_trainer_call(ctx, node) for node in walk(root))


def walk(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every semantic node under `root` (root included), depth-first."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(iter_children(node))


def self_attribute_name(node: cst.BaseExpression) -> str | None:
    """`x` of `self.x`, else None."""
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    ):
        return node.attr.value
    return None


def is_literal(node: cst.BaseExpression) -> bool:
    """A literal that cannot mean "no accelerator" by being None/0 at run time."""
    if isinstance(node, (cst.Integer, cst.SimpleString)):
        return True
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(isinstance(e.value, cst.Integer) for e in node.elements)
    return False


def is_log_call(call: cst.Call) -> str | None:
    """ "log" or "log_dict" for `self.log(...)` / `self.log_dict(...)` (also through
    `self.model.log` in Lightning tasks that forward to their model), else None."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in ("log", "log_dict"):
        return None
    receiver = func.value
    if isinstance(receiver, cst.Name) and receiver.value in ("self", "pl_module"):
        return func.attr.value
    if (
        isinstance(receiver, cst.Attribute)
        and isinstance(receiver.value, cst.Name)
        and receiver.value.value == "self"
        and receiver.attr.value in ("model", "module", "lightning_module", "pl_module")
    ):
        return func.attr.value
    return None


def is_method_call(node: cst.CSTNode, method: str, nargs: int | None = 0) -> bool:
    """`<expr>.<method>(...)` with `nargs` arguments (any number when None)."""
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == method
        and (nargs is None or len(node.args) == nargs)
    )


def source_of(ctx: FileContext, node: cst.CSTNode, limit: int = 60) -> str:
    """Short source text of a node for messages (`loss.item()`)."""
    text = " ".join(ctx.module.code_for_node(node).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- launching code -----------------------------------------------------------------------

_RUN_METHODS = frozenset({"fit", "validate", "test", "predict"})


def launch_position(ctx: FileContext, node: cst.CSTNode) -> str | None:
    """Where `node` runs in the launching process before Lightning spawns the TPU
    processes: "import" (module or class body, a parameter default), "launcher" (a function
    or `__main__` block that builds a Trainer, before its `trainer.fit(...)`), else None."""
    outermost: cst.FunctionDef | None = None
    main_block: cst.If | None = None
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Param):
            return "import" if outermost is None else None
        if isinstance(ancestor, cst.Lambda):
            return None
        if isinstance(ancestor, cst.FunctionDef):
            outermost = ancestor
        if isinstance(ancestor, cst.If) and "__main__" in ctx.module.code_for_node(ancestor.test):
            main_block = ancestor
    if outermost is None:
        if main_block is not None and not contains_trainer_call(ctx, main_block):
            return None  # a `__main__` block of a script that trains without Lightning
        return "import" if main_block is None else "launcher"
    info = ctx.analysis.function(outermost)
    if info is not None and (info.cls is not None or info.hot):
        return None  # a method: runs where Lightning runs it (TPU005 covers modules)
    if not contains_trainer_call(ctx, outermost.body):
        return None
    return "launcher" if _before_run(ctx, outermost, node) else None


def _before_run(ctx: FileContext, function: cst.FunctionDef, node: cst.CSTNode) -> bool:
    """Whether `node` comes before the first `trainer.fit(...)`-like call of `function`
    (true when there is none)."""
    from tpulint.analysis.positions import PositionIndex

    runs = [
        call
        for call in walk(function.body)
        if isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value in _RUN_METHODS
    ]
    if not runs:
        return True
    positions = PositionIndex(ctx.module, ctx.source)
    positions.resolve([node, *runs], ctx.parents)
    first_run = min(positions.range(run)[0] for run in runs)
    return positions.range(node)[0] < first_run


# The methods that build an object: a Lightning class's run in the launching process, before
# Lightning spawns one process per TPU device.
CONSTRUCTION_METHODS = frozenset({"__init__", "__new__", "__post_init__"})


def enclosing_method(ctx: FileContext) -> tuple[object | None, cst.FunctionDef | None]:
    """(ClassInfo, FunctionDef) of the method the walk is in (through nested defs)."""
    info = ctx.function
    while info is not None:
        if info.cls is not None:
            return info.cls, info.node
        info = info.parent
    return None, None


def builds_lightning_object(ctx: FileContext) -> bool:
    """Whether the walk is where a Lightning class is built: its body or one of its
    construction methods (through nested functions)."""
    if ctx.lightning_class is None:
        return False
    _, method = enclosing_method(ctx)
    return method is None or method.name.value in CONSTRUCTION_METHODS
