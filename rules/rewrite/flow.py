"""Following values through a function: parents and source order of all its nodes, the
reads of a local after it is bound, and where a name was last bound.

The engine's walk links a node to its parent when it reaches it, so a rule sees the ancestors
of the node it is visiting but nothing after it. The rewrites that follow a local to its later
uses (`.item()` into a logged local, `y = y[mask]` then a loss of `y`) index the whole
function once and link it (`link_function`), so the same helpers work on later statements.
"""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import FileContext


class FunctionIndex:
    """Parents and source order of every node of one function: the walk links only the
    nodes visited so far, and following a local to its later uses needs the rest."""

    def __init__(self, function: cst.CSTNode) -> None:
        from tpulint.analysis.walker import iter_children

        self.parents: dict[int, cst.CSTNode] = {}
        self.order: list[cst.CSTNode] = []
        stack = [function]
        while stack:
            node = stack.pop()
            self.order.append(node)
            children = list(iter_children(node))
            for child in children:
                self.parents[id(child)] = node
            stack.extend(reversed(children))
        self.position = {id(n): i for i, n in enumerate(self.order)}
        self.linked = False

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(id(node))

    def reads_after(self, name: str, statement: cst.CSTNode) -> list[cst.Name] | None:
        """The reads of local `name` after `statement`, up to a rebinding that surely
        replaces its value for every later read: one in the same block as `statement` (the
        rebinding statement's own right-hand side still reads the old value). A rebinding in
        a nested block (an `if` branch) does not end it: other paths still read the old
        value. None when a rebinding makes the reads unclear (augmented, a loop target)."""
        start = self.position.get(id(statement))
        if start is None:
            return None
        inside = {id(n) for n in self._subtree(statement)}
        block = self.block_of(statement)
        found: list[cst.Name] = []
        rebinding: set[int] | None = None  # the final rebinding statement's nodes
        for node in self.order[start:]:
            if rebinding is not None and id(node) not in rebinding:
                break  # past the statement that rebound it in the same block
            if id(node) in inside or not isinstance(node, cst.Name) or node.value != name:
                continue
            holder = self.parent(node)
            if isinstance(holder, cst.AssignTarget) and holder.target is node:
                assign = self.parent(holder)
                if assign is not None and self.block_of(assign) is block:
                    rebinding = {id(n) for n in self._subtree(assign)}
                continue
            if (
                isinstance(holder, (cst.AugAssign, cst.For, cst.AnnAssign))
                and holder.target is node
            ):
                return None
            if isinstance(holder, cst.Attribute) and holder.attr is node:
                continue  # `x.name`, not the local
            if isinstance(holder, cst.Arg) and holder.keyword is node:
                continue
            found.append(node)
        return found

    def block_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost block (or the module) a node is in."""
        current = self.parent(node)
        while current is not None and not isinstance(current, (cst.IndentedBlock, cst.Module)):
            current = self.parent(current)
        return current

    def _subtree(self, root: cst.CSTNode) -> list[cst.CSTNode]:
        begin = self.position[id(root)]
        out = [root]
        for node in self.order[begin + 1 :]:
            current = self.parent(node)
            while current is not None and current is not root:
                current = self.parent(current)
            if current is None:
                break
            out.append(node)
        return out


def function_index(ctx: FileContext) -> FunctionIndex | None:
    info = ctx.function
    if info is None:
        return None
    cache = ctx.shared.setdefault("rewrite_function_index", {})
    index = cache.get(id(info.node))
    if index is None:
        index = cache[id(info.node)] = FunctionIndex(info.node)
    return index


def link_function(ctx: FileContext) -> FunctionIndex | None:
    """The current function's index, with every node's parent also known to `ctx.parent`
    (the walk sets the same links when it gets there)."""
    index = function_index(ctx)
    if index is not None and not index.linked:
        for key, parent in index.parents.items():
            ctx.parents.setdefault(key, parent)
        index.linked = True
    return index


def last_binding(index: FunctionIndex, name: cst.Name) -> cst.CSTNode | None:
    """The statement that last bound `name` before this read (an Assign, AugAssign, For,
    ...), or None when it is not bound in the function (a parameter, a global)."""
    position = index.position.get(id(name))
    if position is None:
        return None
    enclosing = set()
    current = index.parent(name)
    while current is not None:
        enclosing.add(id(current))
        current = index.parent(current)
    for node in reversed(index.order[:position]):
        if isinstance(node, cst.Name) and node.value == name.value:
            holder = index.parent(node)
            if isinstance(holder, cst.AssignTarget) and holder.target is node:
                statement = index.parent(holder)
                if id(statement) in enclosing:
                    continue  # `y = f(y)`: the value is computed before `y` is rebound
                return statement
            if (
                isinstance(holder, (cst.AugAssign, cst.For, cst.AnnAssign))
                and holder.target is node
            ):
                return holder
            if isinstance(holder, (cst.Element, cst.Param)):
                return holder  # tuple unpacking, a parameter of a nested function
    return None
