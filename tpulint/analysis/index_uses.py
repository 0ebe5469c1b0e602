"""Where a function uses a value as an integer index: what makes it not a boolean mask.

A value named like a mask (`batch_mask`, `lig_mask`, `data["mask"]`) is often the node-to-graph
map of a graph batch, an int64 tensor. The function that holds it says which one it is by how it
uses it: as the index of a scatter or segment reduction (`scatter_mean(x, batch_mask, dim=0)`,
`unsorted_segment_sum(x, ids, num_segments=ids.max() + 1)`), of `index_select`, `gather`,
`bincount` or `one_hot`, or as the number of groups (`batch_mask.max() + 1`). A boolean mask is
none of these (torch rejects a bool index there). Read on Python's `ast` by the project model,
which also follows a value passed to a project helper that uses its parameter so
(`self.sum_except_batch(x, lig_mask)`); the rules ask it by function and text.
"""

from __future__ import annotations

import ast
import re

from tpulint.analysis.python_ast import iter_child_nodes as ast_children

# Calls whose integer index argument sits at this position, in the method or torch_scatter /
# torch_geometric form (`x.index_select(0, idx)`, `scatter_add(src, index, dim=0)`), and in the
# `torch.<name>(input, ...)` form, one place further.
INDEX_ARGUMENT_POSITIONS = {
    "scatter": 1,
    "scatter_": 1,
    "scatter_add": 1,
    "scatter_add_": 1,
    "scatter_reduce": 1,
    "scatter_reduce_": 1,
    "scatter_sum": 1,
    "scatter_mean": 1,
    "scatter_max": 1,
    "scatter_min": 1,
    "scatter_mul": 1,
    "scatter_std": 1,
    "scatter_softmax": 1,
    "scatter_log_softmax": 1,
    "scatter_logsumexp": 1,
    "segment_sum": 1,
    "segment_mean": 1,
    "segment_max": 1,
    "segment_min": 1,
    "segment_csr": 1,
    "segment_coo": 1,
    "unsorted_segment_sum": 1,
    "unsorted_segment_mean": 1,
    "global_add_pool": 1,
    "global_mean_pool": 1,
    "global_max_pool": 1,
    "index_select": 1,
    "index_add": 1,
    "index_add_": 1,
    "index_copy": 1,
    "index_copy_": 1,
    "index_fill": 1,
    "index_fill_": 1,
    "index_reduce": 1,
    "index_reduce_": 1,
    "gather": 1,
    "bincount": -1,  # `x.bincount()`: the receiver; `torch.bincount(x)`: the first argument
    "one_hot": -1,
}
# Keyword names of such an index argument.
INDEX_KEYWORDS = frozenset({"index", "segment_ids", "batch"})
_TORCH_PREFIXES = ("torch.", "th.")
_COLLECTIVE_PREFIXES = ("dist.", "torch.distributed.", "xm.", "hvd.")


def value_text(node: ast.AST) -> str | None:
    """The canonical text of a value an index use can name: `m`, `self.m`, `d['m']` (a
    string key, whatever its quotes). None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        base = value_text(node.value)
        return f"{base}[{node.slice.value!r}]" if base is not None else None
    return None


def value_texts(node: ast.AST) -> list[str]:
    """The values `node` names (`value_text`), and those a concatenation joins
    (`torch.cat((lig_index, pocket_index))`: an index of the parts' rows)."""
    if (
        isinstance(node, ast.Call)
        and _callee(node)[0] in ("cat", "concat", "concatenate")
        and node.args
        and isinstance(node.args[0], (ast.Tuple, ast.List))
    ):
        return [t for part in node.args[0].elts for t in value_texts(part)]
    text = value_text(node)
    return [text] if text is not None else []


def _callee(node: ast.Call) -> tuple[str | None, bool]:
    """The called name's last part, and whether it is called as `torch.<name>(...)`; None
    for the collectives (`dist.gather(t, gather_list)`, `xm.all_gather`)."""
    func = node.func
    if isinstance(func, ast.Name):
        return func.id, False
    if isinstance(func, ast.Attribute):
        root = func.value
        parts = [func.attr]
        while isinstance(root, ast.Attribute):
            parts.append(root.attr)
            root = root.value
        if isinstance(root, ast.Name):
            parts.append(root.id)
        text = ".".join(reversed(parts))
        if text.startswith(_COLLECTIVE_PREFIXES):
            return None, False
        torch_function = text.startswith(_TORCH_PREFIXES) and text.count(".") == 1
        return func.attr, torch_function
    return None, False


def _max_plus_one(node: ast.BinOp) -> ast.AST | None:
    """`m.max() + 1`, `int(m.max()) + 1`, `m.max().item() + 1`: the number of groups `m`
    numbers; `m`."""
    if not isinstance(node.op, ast.Add):
        return None
    if not (isinstance(node.right, ast.Constant) and node.right.value == 1):
        return None
    left = node.left
    if isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.args:
        left = left.args[0]  # int(m.max())
    if (
        isinstance(left, ast.Call)
        and isinstance(left.func, ast.Attribute)
        and left.func.attr == "item"
    ):
        left = left.func.value
    if (
        isinstance(left, ast.Call)
        and isinstance(left.func, ast.Attribute)
        and left.func.attr == "max"
        and not left.args
    ):
        return left.func.value
    return None


def index_uses(body: list[ast.stmt]) -> list[str]:
    """The texts (see `value_text`) of the values `body` uses as integer indices."""
    found: list[str] = []

    def add(node: ast.AST | None) -> None:
        for text in value_texts(node) if node is not None else ():
            if text not in found:
                found.append(text)

    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # a nested function or class is read on its own
        stack.extend(reversed(list(ast_children(node))))
        if isinstance(node, ast.BinOp):
            add(_max_plus_one(node))
            continue
        if not isinstance(node, ast.Call):
            continue
        name, torch_function = _callee(node)
        position = INDEX_ARGUMENT_POSITIONS.get(name or "")
        if position is None:
            continue
        for keyword in node.keywords:
            if keyword.arg in INDEX_KEYWORDS:
                add(keyword.value)
        if position < 0:
            if node.args:
                add(node.args[0])
            elif isinstance(node.func, ast.Attribute):
                add(node.func.value)
            continue
        position += 1 if torch_function else 0
        if position < len(node.args):
            add(node.args[position])
    return found


# Words without which a source has no index use (a cheap screen before the walk).
MENTIONS = re.compile(r"scatter|segment|_pool|index_|gather|bincount|one_hot|\.max\(")
