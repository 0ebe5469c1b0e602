"""Selections bound to locals that are only reduced later (TPU202):

    y_pred = y_pred[mask]
    y_true = y_true[mask]
    loss = F.binary_cross_entropy(y_pred, y_true.float())

becomes

    loss = torch.where(mask, F.binary_cross_entropy(y_pred, y_true.float(), reduction="none"),
                       0).sum() / mask.sum()

The statements that bind the selections go, and every later use of those locals (which must
all be reductions or losses, in the same block) is rewritten on the whole tensors. The
mask and the selected tensors are read again at those uses, so the names they read must keep
their values in between (only the removed statements may rebind them: `refs = refs[m]`
leaves `refs` as it was once removed).
"""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.rule import FixSpec

from ..shared.tensors import Bindings
from .consumers import consumer_fix
from .expressions import expression
from .flow import FunctionIndex, last_binding, link_function
from .purity import is_pure
from .regions import Leaves, Region, operand, region_around, unselected

_MAX_GROUP = 6


def _candidate(ctx: FileContext, leaves: Leaves, node: cst.CSTNode | None) -> Region | None:
    """The region of `name = <selections by the mask>` when `node` is such a statement (alone
    on its line), else None."""
    if not (
        isinstance(node, cst.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0].target, cst.Name)
    ):
        return None
    line = ctx.parent(node)
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    plain = Leaves(leaves.ctx, leaves.bindings, leaves.like)
    found: dict[int, tuple[cst.CSTNode, cst.BaseExpression]] = {}
    if not operand(plain, node.value, found) or not found:
        return None
    return Region(node.value, found)


def _names_read(node: cst.CSTNode) -> set[str]:
    from ..shared.matchers import walk

    return {n.value for n in walk(node) if isinstance(n, cst.Name)}


def _bindings_between(
    index: FunctionIndex, start: cst.CSTNode, end: cst.CSTNode, skip: set[int]
) -> set[str]:
    """Names bound by statements between `start` and `end` other than those in `skip`."""
    first, last = index.position[id(start)], index.position[id(end)]
    bound: set[str] = set()
    for node in index.order[first + 1 : last]:
        if isinstance(node, cst.AssignTarget):
            statement = index.parent(node)
            if id(statement) in skip:
                continue
            bound |= _names_read(node.target)
        elif isinstance(node, (cst.AugAssign, cst.For)):
            bound |= _names_read(node.target)
    return bound


def _block_of(index: FunctionIndex, node: cst.CSTNode) -> cst.CSTNode | None:
    current = index.parent(node)
    while current is not None and not isinstance(current, (cst.IndentedBlock, cst.Module)):
        current = index.parent(current)
    return current


def _within(index: FunctionIndex, node: cst.CSTNode, ancestor: cst.CSTNode) -> bool:
    current: cst.CSTNode | None = node
    while current is not None:
        if current is ancestor:
            return True
        current = index.parent(current)
    return False


def bound_fix(
    ctx: FileContext, bindings: Bindings, leaves: Leaves, assign: cst.Assign
) -> FixSpec | None:
    """Remove the statements binding selections to locals and rewrite every use of those
    locals, when every use is a reduction or a loss; None otherwise."""
    like = leaves.like
    if not like.plain or not is_pure(ctx, like.mask):
        return None
    index = link_function(ctx)
    if index is None:
        return None
    group: dict[int, tuple[cst.Assign, Region]] = {}
    replacements: dict[int, cst.BaseExpression] = {}

    def resolve(name: cst.Name) -> cst.BaseExpression | None:
        statement = last_binding(index, name)
        if statement is None:
            return None
        if id(statement) not in group:
            region = _candidate(ctx, leaves, statement)
            if region is None or len(group) >= _MAX_GROUP:
                return None
            group[id(statement)] = (statement, region)  # type: ignore[assignment]
            queue.append(statement)  # type: ignore[arg-type]
        if id(statement) not in replacements:
            replacements[id(statement)] = expression(unselected(ctx, group[id(statement)][1]))
        return replacements[id(statement)]

    first = _candidate(ctx, leaves, assign)
    if first is None:
        return None
    group[id(assign)] = (assign, first)
    queue: list[cst.Assign] = [assign]
    grouped = Leaves(ctx, bindings, like, locals=resolve)
    consumers: dict[int, tuple[cst.BaseExpression, FixSpec, cst.Assign]] = {}
    done: set[int] = set()
    while queue:
        statement = queue.pop()
        if id(statement) in done:
            continue
        done.add(id(statement))
        name = statement.targets[0].target.value  # type: ignore[union-attr]
        reads = index.reads_after(name, statement)
        if not reads:
            return None  # never used (or rebound in a loop): not ours to remove
        for read in reads:
            if last_binding(index, read) is not statement:
                return None  # another binding may reach this read (a branch rebinds it)
            region = region_around(grouped, read)
            fix = consumer_fix(ctx, bindings, grouped, region)
            if fix is None or len(fix.replacements) != 1:
                return None
            outer = fix.replacements[0][0]
            consumers.setdefault(id(outer), (outer, fix, statement))  # type: ignore[arg-type]
    ordered = sorted(group.values(), key=lambda item: index.position[id(item[0])])
    statements = {id(s): s for s, _ in ordered}
    skip = set(statements)
    for statement, region in ordered:
        line = ctx.parent(statement)
        block = _block_of(index, line) if line is not None else None
        read = _names_read(region.top)
        for outer, _fix, _source in consumers.values():
            if block is None or not _within(index, outer, block):
                return None  # the use is in another block: it may see another binding
            if index.position[id(outer)] < index.position[id(statement)]:
                return None
            if _bindings_between(index, statement, outer, skip) & read:
                return None  # a selected tensor or the mask changes before the use
    names = ", ".join(
        f"`{s.targets[0].target.value}`"
        for s in statements.values()  # type: ignore[union-attr]
    )
    first_fix = next(iter(consumers.values()))[1]
    removals = [(ctx.parent(s), cst.RemovalSentinel.REMOVE) for s in statements.values()]
    return FixSpec(
        Applicability.UNSAFE,
        f"Do not select into {names}: compute its uses on the whole tensors and reduce over"
        f" the mask; {first_fix.message[0].lower()}{first_fix.message[1:]}",
        [*removals, *((outer, fix.replacements[0][1]) for outer, fix, _ in consumers.values())],
        add_imports=tuple({i for _, fix, _ in consumers.values() for i in fix.add_imports}),
    )
