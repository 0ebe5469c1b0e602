"""TPU304 dynamic-padding."""

from __future__ import annotations

import ast
import re

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.project import FileView
from tpulint.analysis.python_ast import parse_python
from tpulint.analysis.python_ast import walk as ast_walk
from tpulint.analysis.walker import iter_children
from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.cst_helpers import add_keyword, keyword_arg, replace_arg, string_value
from tpulint.rule_api.rule import Invalid, Valid

from ..shared.matchers import walk
from .helpers import _callee_name, _DataRule, code, has_star_kwargs, is_none, is_true

# Collators whose job is padding. (DataCollatorForLanguageModeling pads too, but its inputs
# are normally fixed-size blocks: its job is masking.)
_PADDING_COLLATORS = frozenset(
    {"DataCollatorWithPadding", "DataCollatorForSeq2Seq", "DataCollatorForTokenClassification"}
)
# Code that runs at inference or export time, not in the training input pipeline.
_NOT_TRAINING = re.compile(
    r"(transcri|diariz|infer|predict|generat|synthes|export|input_example|demo|(^|_)stream)",
    re.IGNORECASE,
)
_TOKENIZER_METHODS = frozenset({"batch_encode_plus", "encode_plus", "pad", "__call__", "encode"})
# Methods only Hugging Face tokenizers have: the receiver may be named anything
# (`self.alphabet.batch_encode_plus(...)`).
_TOKENIZER_ONLY_METHODS = frozenset({"batch_encode_plus", "encode_plus"})
_COLLATE_NAME = re.compile(r"(collat|padder|pad_batch|batchify)", re.IGNORECASE)
# What a tokenizer call's callee must say (`_is_tokenizer_call`), case-insensitively.
_TOKENIZER_TEXT = re.compile(r"tok|processor", re.IGNORECASE)
_SURE_COLLATE = re.compile(r"(^_?collate(_fn|_batch)?$|collate_fn$)", re.IGNORECASE)


# Keywords of a multimodal processor call that carry no sequence to pad: a processor given
# only images (or audio features of a fixed size) ignores `padding=`.
_MEDIA_KEYWORDS = frozenset({"images", "videos", "pixel_values"})


def _pads_a_sequence(node: cst.Call) -> bool:
    """Whether a tokenizer/processor call has something `padding=` pads: a positional or
    `text=`-like argument (anything but images), or arguments it cannot see (`**kwargs`)."""
    for arg in node.args:
        if arg.star:
            return True
        if arg.keyword is None:
            return True
        if arg.keyword.value in _MEDIA_KEYWORDS or arg.keyword.value in _CALL_OPTIONS:
            continue
        return True
    return False


# Options of a tokenizer/processor call that are not its inputs.
_CALL_OPTIONS = frozenset(
    {
        "padding",
        "truncation",
        "max_length",
        "return_tensors",
        "pad_to_multiple_of",
        "return_attention_mask",
        "add_special_tokens",
        "do_rescale",
        "do_resize",
        "do_normalize",
    }
)


_SIZED_FACTORIES = frozenset(
    {
        "zeros",
        "ones",
        "full",
        "empty",
        "new_zeros",
        "new_ones",
        "new_full",
        "new_empty",
        "pad",
        "pad_tensor",
        "pad_to",
        "expand",
        "arange",
    }
)


# Legacy tensor types called with sizes (`torch.LongTensor(n, longest)`); given a list they
# hold data, so only bare names as arguments count (`_sizes_something`).
_LEGACY_TENSOR_TYPES = frozenset(
    {
        "Tensor",
        "LongTensor",
        "FloatTensor",
        "IntTensor",
        "DoubleTensor",
        "HalfTensor",
        "BoolTensor",
        "ByteTensor",
    }
)


# A name that holds sizes: `lengths`, `max_len`, `img_sizes`, `shapes`.
_SIZES_NAME = re.compile(r"(?i)(len|length|size|shape)")


def _reads_sizes(node: cst.CSTNode) -> bool:
    """`len(x)`, `x.shape`, `x.size(...)` somewhere under `node`."""
    return any(
        (isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == "len")
        or (isinstance(n, cst.Attribute) and n.attr.value == "shape")
        or (
            isinstance(n, cst.Call)
            and isinstance(n.func, cst.Attribute)
            and n.func.attr.value == "size"
        )
        for n in walk(node)
    )


def _longest_length(value: cst.BaseExpression, sized: frozenset[str] = frozenset()) -> bool:
    """`max(len(x) for x in batch)`, `max([s.shape[0] for s in batch])`, `max(lengths)` where
    the argument holds lengths, `max([s[1] for s in img_sizes])` over a collection of sizes:
    the batch's longest element. `sized`: names an enclosing comprehension binds to sizes."""
    if not (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Name)
        and value.func.value == "max"
        and len(value.args) == 1
    ):
        return False
    argument = value.args[0].value
    if isinstance(argument, (cst.GeneratorExp, cst.ListComp)):
        if _reads_sizes(argument.elt):
            return True
        loop: cst.CompFor | None = argument.for_in
        while loop is not None:
            if isinstance(loop.iter, cst.Name) and _SIZES_NAME.search(loop.iter.value):
                return True
            loop = loop.inner_for_in
        return False
    if isinstance(argument, cst.Name):
        return argument.value in sized or bool(_SIZES_NAME.search(argument.value))
    return False


def _batch_maximum(value: cst.BaseExpression) -> bool:
    """The batch's own maximum: a longest length (`_longest_length`), or one per dimension
    built by a comprehension (`[max(x.shape[d] for x in items) for d in range(x.dim())]`,
    `[max(s) for s in zip(*[x.shape for x in items])]`), also through `tuple(...)`/`list(...)`."""
    if _longest_length(value):
        return True
    if (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Name)
        and value.func.value in ("tuple", "list")
        and len(value.args) == 1
    ):
        value = value.args[0].value
    if not isinstance(value, (cst.GeneratorExp, cst.ListComp)):
        return False
    # Names the comprehension binds to sizes: `for s in zip(*[x.shape for x in items])`.
    sized: set[str] = set()
    loop: cst.CompFor | None = value.for_in
    while loop is not None:
        if _reads_sizes(loop.iter):
            sized.update(n.value for n in walk(loop.target) if isinstance(n, cst.Name))
        loop = loop.inner_for_in
    return _longest_length(value.elt, frozenset(sized))


def _is_max(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "max"


def _could_be_longest(call: ast.Call) -> bool:
    """`_longest_length`'s shape read with `ast` (a superset: every argument, starred or
    keyword, is tried; comprehensions are accepted whatever they read)."""
    for argument in [*call.args, *(k.value for k in call.keywords)]:
        if isinstance(argument, ast.Starred):
            argument = argument.value
        if isinstance(argument, (ast.GeneratorExp, ast.ListComp)):
            return True
        if isinstance(argument, ast.Name) and _SIZES_NAME.search(argument.id):
            return True
        if len(call.args) == 2 and any(
            (isinstance(n, ast.Attribute) and n.attr == "shape")
            or (
                isinstance(n, ast.Call)
                and (
                    (isinstance(n.func, ast.Attribute) and n.func.attr == "size")
                    or (isinstance(n.func, ast.Name) and n.func.id == "len")
                )
            )
            for n in ast_walk(argument)
        ):
            return True  # a running maximum: `longest = max(longest, x.size(1))`
    return False


def _longest_item_ast(value: ast.expr) -> bool:
    """`max(batch, key=...)` or `max(batch, key=...)[0]` read with `ast`."""
    if isinstance(value, ast.Subscript):
        value = value.value
    return _is_max(value) and any(k.arg == "key" for k in value.keywords)  # type: ignore[attr-defined]


def _longest_item(value: cst.BaseExpression) -> bool:
    """`max(batch, key=lambda s: s[0].size(1))`, also indexed (`max(batch, key=f)[0]`): the
    batch's longest element itself, whose size is the batch's longest length."""
    if isinstance(value, cst.Subscript):
        value = value.value
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Name)
        and value.func.value == "max"
        and any(a.keyword is not None and a.keyword.value == "key" for a in value.args)
        and sum(1 for a in value.args if a.keyword is None and not a.star) == 1
    )


def _measured_dim(value: cst.BaseExpression) -> tuple[cst.BaseExpression, int] | None:
    """`x.size(1)`, `x.shape[1]`, `len(x)` (dimension 0): what is measured and which
    dimension; None for anything else."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
        if value.func.value == "len" and len(value.args) == 1:
            return value.args[0].value, 0
        return None
    if (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "size"
        and len(value.args) == 1
        and isinstance(value.args[0].value, cst.Integer)
    ):
        return value.func.value, int(value.args[0].value.value, 0)
    if (
        isinstance(value, cst.Subscript)
        and isinstance(value.value, cst.Attribute)
        and value.value.attr.value == "shape"
        and len(value.slice) == 1
        and isinstance(value.slice[0].slice, cst.Index)
        and isinstance(value.slice[0].slice.value, cst.Integer)
    ):
        return value.value.value, int(value.slice[0].slice.value.value, 0)
    return None


def _key_dim(value: cst.BaseExpression, body: cst.CSTNode) -> int | None:
    """The dimension `max(batch, key=...)` compares: a lambda or a function nested in
    `body` that returns one size of its argument (`lambda s: s[0].size(1)`)."""
    if isinstance(value, cst.Subscript):
        value = value.value
    assert isinstance(value, cst.Call)
    key = next(a.value for a in value.args if a.keyword is not None and a.keyword.value == "key")
    returned: cst.BaseExpression | None = None
    if isinstance(key, cst.Lambda):
        returned = key.body
    elif isinstance(key, cst.Name):
        for node in walk(body):
            if isinstance(node, cst.FunctionDef) and node.name.value == key.value:
                returns = [r for r in walk(node) if isinstance(r, cst.Return)]
                if len(returns) == 1 and returns[0].value is not None:
                    returned = returns[0].value
    measured = _measured_dim(returned) if returned is not None else None
    return measured[1] if measured is not None else None


def _size_of(value: cst.BaseExpression, items: dict[str, int]) -> bool:
    """`x.size(d)`, `x.shape[d]` (`len(x)`: d = 0) of a longest item `x` that `max(...,
    key=...)` chose by its size in dimension `d` (`items`: name -> d)."""
    measured = _measured_dim(value)
    if measured is None or not isinstance(measured[0], cst.Name):
        return False
    return items.get(measured[0].value) == measured[1]


def _assigns_longest_length(source: str) -> bool:
    """Whether the code has an assignment the hand-rolled padding check can report,
    `name = <the batch's maximum>` (`_batch_maximum`), read with `ast` (a superset): a
    `max(...)` call of `_longest_length`'s shape, or a comprehension (or `tuple`/`list` of
    one) whose element is a `max(...)` of one argument."""
    tree = parse_python(source)
    if tree is None:
        return True  # the libcst parse reports it
    for node in ast_walk(tree):
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            continue
        value = node.value
        if _is_max(value) and _could_be_longest(value):
            return True
        if _longest_item_ast(value):
            return True  # `longest = max(batch, key=...)[0]`, sized later (visit_Assign)
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in ("tuple", "list")
            and len(value.args) == 1
        ):
            value = value.args[0]
        if (
            isinstance(value, (ast.GeneratorExp, ast.ListComp))
            and _is_max(value.elt)
            and len(value.elt.args) == 1
        ):
            return True
    return False


def _defines_collate_function(source: str) -> bool:
    """Whether the code defines a function `_collate_helpers` starts from, read with `ast`
    (a superset): one named like a collate function or passed as `collate_fn=` (by name or
    attribute) in this file, or a `__call__` inside a class named like a collator. Without
    one, `_collate_function` finds nothing in the file."""
    tree = parse_python(source)
    if tree is None:
        return True  # the libcst parse reports it
    names: set[str] = set()
    passed: set[str] = set()
    for node in ast_walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.keyword) and node.arg == "collate_fn":
            if isinstance(node.value, ast.Name):
                passed.add(node.value.id)
            elif isinstance(node.value, ast.Attribute):
                passed.add(node.value.attr)
        elif (
            isinstance(node, ast.ClassDef)
            and _COLLATE_NAME.search(node.name)
            and any(
                isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef))
                and inner.name == "__call__"
                for inner in ast_walk(node)
            )
        ):
            return True
    return any(_COLLATE_NAME.search(name) or name in passed for name in names)


def _is_pad_helper(func: cst.BaseExpression) -> bool:
    """A callee named for padding (`pad_feats`, `self.pad_to`, `self.padding_ops[key]`): the
    length passed to it is what it pads to."""
    while isinstance(func, cst.Subscript):
        func = func.value
    if isinstance(func, cst.Attribute):
        name = func.attr.value
    elif isinstance(func, cst.Name):
        name = func.value
    else:
        return False
    return "pad" in name.lower()


def _derived_names(body: cst.CSTNode, name: str) -> set[str]:
    """`name` and the names assigned from it in `body` (`size = (len(batch),) + tuple(name)`),
    transitively."""
    names = {name}
    assigns = [
        node
        for node in walk(body)
        if isinstance(node, cst.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0].target, cst.Name)
    ]
    grew = True
    while grew:
        grew = False
        for node in assigns:
            target = node.targets[0].target.value
            if target not in names and any(
                isinstance(n, cst.Name) and n.value in names for n in walk(node.value)
            ):
                names.add(target)
                grew = True
    return names


def _sizes_something(body: cst.CSTNode, name: str) -> bool:
    """Whether `name` is used to size a tensor or a pad in `body`: an argument of a tensor
    factory or a padding call (directly, or through a name built from it:
    `size = (len(batch),) + tuple(max_sizes)`), or part of a slice or a `range` that fills a
    padded buffer."""
    names = _derived_names(body, name)
    for node in walk(body):
        if isinstance(node, cst.Call):
            callee = _callee_name(node)
            if callee in _LEGACY_TENSOR_TYPES and any(
                isinstance(a.value, cst.Name) and a.value.value in names for a in node.args
            ):
                return True  # `LongTensor(len(batch), longest)`: sizes, not data
            if (callee in _SIZED_FACTORIES or _is_pad_helper(node.func)) and any(
                isinstance(n, cst.Name) and n.value in names
                for arg in node.args
                for n in walk(arg.value)
            ):
                return True
        if isinstance(node, cst.Slice) and any(
            isinstance(n, cst.Name) and n.value == name
            for bound in (node.lower, node.upper)
            if bound is not None
            for n in walk(bound)
        ):
            return True
        # `seq + [pad] * (longest - len(seq))`: a list padded to the longest.
        if (
            isinstance(node, cst.BinaryOperation)
            and isinstance(node.operator, cst.Multiply)
            and any(isinstance(side, cst.List) for side in (node.left, node.right))
            and any(
                isinstance(n, cst.Name) and n.value in names
                for side in (node.left, node.right)
                if not isinstance(side, cst.List)
                for n in walk(side)
            )
        ):
            return True
    return False


def _rounded_to_multiple(body: cst.CSTNode, name: str) -> bool:
    """Whether `body` rounds the longest length up to a multiple before using it
    (`longest = (longest + m - 1) // m * m`, Hugging Face's `pad_to_multiple_of`): a few
    bucketed lengths, what the rule recommends."""
    for node in walk(body):
        if (
            isinstance(node, cst.Assign)
            and any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets)
            and any(
                isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.FloorDivide)
                for n in walk(node.value)
            )
            and any(isinstance(n, cst.Name) and n.value == name for n in walk(node.value))
        ):
            return True
    return False


def _length_of(node: cst.CSTNode, name: str) -> bool:
    """`name.size(...)`, `name.shape[...]` or `len(name)` somewhere under `node`: the length
    the batch was padded to."""
    for n in walk(node):
        if isinstance(n, cst.Call):
            func = n.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value == "size"
                and isinstance(func.value, cst.Name)
                and func.value.value == name
            ):
                return True
            if (
                isinstance(func, cst.Name)
                and func.value == "len"
                and n.args
                and isinstance(n.args[0].value, cst.Name)
                and n.args[0].value.value == name
            ):
                return True
        if (
            isinstance(n, cst.Attribute)
            and n.attr.value == "shape"
            and isinstance(n.value, cst.Name)
            and n.value.value == name
        ):
            return True
    return False


def _batch_count(node: cst.CSTNode, name: str) -> bool:
    """`name.size(0)`, `name.shape[0]` or `len(name)`: the number of rows, not their length."""
    measured = _measured_dim(node) if isinstance(node, cst.BaseExpression) else None
    return (
        measured is not None
        and measured[1] == 0
        and isinstance(measured[0], cst.Name)
        and measured[0].value == name
    )


def _fixed_length(target: cst.BaseExpression, padded: str, longest: set[str]) -> bool:
    """Whether `target`, a size a padded batch is brought to, is fixed: it calls no `max(...)`
    and reads neither a name holding the batch's longest length nor the padded batch itself
    (but for its number of rows, `padded.size(0)`)."""
    stack: list[cst.CSTNode] = [target]
    while stack:
        node = stack.pop()
        if _batch_count(node, padded):
            continue
        if isinstance(node, cst.Call) and _callee_name(node) == "max":
            return False
        if isinstance(node, cst.Name) and node.value in (longest | {padded}):
            return False
        stack.extend(iter_children(node))
    return True


def _repadded_to_fixed_length(body: cst.CSTNode, padded: str) -> bool:
    """Whether the batch `padded` (padded to its longest element) is then brought to a fixed
    length in `body`, so every batch has the same shape after all:
    `F.pad(padded, (0, self.max_len - padded.size(1)))`, or a buffer of a fixed size filled
    from it (`out = torch.zeros(b, self.max_len); out[:, : padded.size(1)] = padded`)."""
    longest = {
        statement.targets[0].target.value
        for statement in walk(body)
        if isinstance(statement, cst.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0].target, cst.Name)
        and _batch_maximum(statement.value)
    }
    for node in walk(body):
        # `x = pad_or_trim(x, max_len=L)` / `return truncate_or_pad(x, self.seq_len)`
        result = node.value if isinstance(node, (cst.Assign, cst.Return)) else None
        if isinstance(result, cst.Call) and _fits_to_length(result, padded, longest):
            return True
    buffers: dict[str, cst.Call] = {}
    for node in walk(body):
        if (
            isinstance(node, cst.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and isinstance(node.value, cst.Call)
            and _callee_name(node.value) in _SIZED_FACTORIES - {"pad", "expand", "arange"}
        ):
            buffers[node.targets[0].target.value] = node.value
    for node in walk(body):
        # `pad(padded, (..., L - padded.size(1)))`: the pad amount tops the batch up to L.
        if isinstance(node, cst.Call) and (
            _callee_name(node) == "pad" or _is_pad_helper(node.func)
        ):
            args = [a for a in node.args if not a.star]
            if not (args and isinstance(args[0].value, cst.Name) and args[0].value.value == padded):
                continue
            for amount in (n for arg in args[1:] for n in walk(arg.value)):
                if (
                    isinstance(amount, cst.BinaryOperation)
                    and isinstance(amount.operator, cst.Subtract)
                    and _length_of(amount.right, padded)
                    and _fixed_length(amount.left, padded, longest)
                ):
                    return True
        # `out[:, : padded.size(1)] = padded` into `out = torch.zeros(b, L)` of a fixed L.
        if (
            isinstance(node, cst.Assign)
            and isinstance(node.value, cst.Name)
            and node.value.value == padded
        ):
            for target in node.targets:
                written = target.target
                if not (
                    isinstance(written, cst.Subscript)
                    and isinstance(written.value, cst.Name)
                    and any(_length_of(element, padded) for element in written.slice)
                ):
                    continue
                factory = buffers.get(written.value.value)
                if factory is not None and all(
                    _fixed_length(arg.value, padded, longest) for arg in factory.args
                ):
                    return True
    return False


# A helper named for bringing a batch to a length, and the argument that says which.
_FITTING_HELPER = re.compile(r"pad|trim|truncat|crop", re.IGNORECASE)
_LENGTH_ARGUMENT = re.compile(r"len(?:gth)?|size|seq_?len|max_?len|horizon|window", re.I)


def _fits_to_length(call: cst.Call, padded: str, longest: set[str]) -> bool:
    """`pad_or_trim(padded, length=L)`, `truncate_or_pad(padded, self.max_len)`: a helper
    named for padding or trimming (not `F.pad`, read apart) given the padded batch first or
    by keyword, and a fixed length in an argument named for one (a keyword, or a name or an
    attribute passed by position): it returns the batch at that length."""
    name = _callee_name(call)
    if name is None or name == "pad" or not _FITTING_HELPER.search(name):
        return False
    args = [a for a in call.args if not a.star]
    given = any(
        isinstance(a.value, cst.Name)
        and a.value.value == padded
        and (a.keyword is not None or index == 0)
        for index, a in enumerate(args)
    )
    if not given:
        return False
    for index, arg in enumerate(args):
        value = arg.value
        if isinstance(value, cst.Name) and value.value == padded:
            continue
        if arg.keyword is not None:
            named = arg.keyword.value
        elif index > 0 and isinstance(value, (cst.Name, cst.Attribute)):
            named = value.value if isinstance(value, cst.Name) else value.attr.value
        else:
            continue
        if _LENGTH_ARGUMENT.search(named) and _fixed_length(value, padded, longest):
            return True
    return False


# `.any(dim=0)` / `.any(0)` / `torch.any(x, dim=0)` in a file (the applies screen).
_COLUMN_ANY = re.compile(r"any\((?:[^()]*,\s*)?(?:dim\s*=\s*)?0\)")


def _column_any(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """`ids.ne(pad_id).any(dim=0)`, `(ids != pad_id).any(0)`, `torch.any(mask, dim=0)`: which
    columns of a batch hold anything, the mask that trims it to its longest column."""
    if not isinstance(node, cst.Call):
        return False
    args = [a for a in node.args if not a.star]
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "any":
        qualified = ctx.qualify(node.func) or ""
        if qualified == "torch.any":
            args = args[1:]
        elif qualified.startswith(("numpy.", "np.")):
            return False
    else:
        return False
    if len(args) != 1 or (args[0].keyword is not None and args[0].keyword.value != "dim"):
        return False
    return isinstance(args[0].value, cst.Integer) and args[0].value.value == "0"


def _collate_helpers(ctx: FileContext, collate_names: set[str]) -> dict[int, str]:
    """Functions of the file that a collate function calls (transitively, through `self.` or
    by name), each with the collate function it is reached from."""
    functions = list(ctx.analysis.functions.values())
    by_name: dict[str, list] = {}
    for info in functions:
        by_name.setdefault(info.name, []).append(info)
    roots = [
        info
        for info in functions
        if _COLLATE_NAME.search(info.name)
        or info.name in collate_names
        or (
            info.name == "__call__" and info.cls is not None and _COLLATE_NAME.search(info.cls.name)
        )
    ]
    out: dict[int, str] = {}
    worklist = [(info, info.name) for info in roots]
    seen = {id(info.node) for info in roots}
    while worklist:
        info, root = worklist.pop()
        for called in (*info.calls_self, *info.calls_bare):
            for target in by_name.get(called, ()):
                if target is info or id(target.node) in out:
                    continue
                # A function named like a collate that another one calls is its helper too
                # (`collate_tensors` called from `all_collate`).
                out[id(target.node)] = root
                if id(target.node) not in seen:
                    seen.add(id(target.node))
                    worklist.append((target, root))
    return out


def _collate_reach(view: FileView) -> dict[str, str]:
    """The project's functions a training data loader's collate runs (function gkey -> the
    collate it is reached from): what a `collate_fn=` argument names or its lambda calls
    (ScopeFacts.collate_refs; loaders built in inference code aside), and every project
    function named as a collate function (`collate_fn`, `_collate`), followed through their
    calls (overrides in subclasses too; a method of an attribute the model cannot type,
    `self.encoder.prepare_sample(...)`, by its name among the project's methods, when few
    have it). Computed once per project."""
    model = view.model
    cached = model.__dict__.get("_collate_reach")
    if cached is not None:
        return cached
    reach: dict[str, str] = {}
    queue: list[tuple[object, int]] = []

    def add(fn: object, root: str, depth: int) -> None:
        gkey = fn.gkey  # type: ignore[attr-defined]
        name = fn.summary.name  # type: ignore[attr-defined]
        if gkey in reach or _NOT_TRAINING.search(name):
            return
        reach[gkey] = root
        queue.append((fn, depth))

    functions = model.functions
    for module in model.modules.values():
        local = model._module_functions[id(module)]
        for key, form, target in module.scope.collate_refs:
            caller = local.get(key)
            if caller is None or _NOT_TRAINING.search(caller.summary.name):
                continue
            for found in model.resolve_call(module, caller.owner, form, target, virtual=True):
                if found.gkey in functions:
                    add(found, found.summary.name, 0)
    for fn in functions.values():
        if _SURE_COLLATE.search(fn.summary.name):
            add(fn, fn.summary.name, 0)
    methods: dict[str, list[object]] = {}
    for fn in functions.values():
        if fn.owner is not None:
            methods.setdefault(fn.summary.name, []).append(fn)
    while queue:
        fn, depth = queue.pop()
        if depth >= 6:
            continue
        root = reach[fn.gkey]  # type: ignore[attr-defined]
        for call in fn.summary.calls:  # type: ignore[attr-defined]
            found = [
                f
                for f in model.resolve_call(
                    fn.module,  # type: ignore[attr-defined]
                    fn.owner,  # type: ignore[attr-defined]
                    call.form,
                    call.target,
                    virtual=True,
                )
                if f.gkey in functions
            ]
            if not found and call.form == "attr" and call.target.count(".") == 1:
                named = methods.get(call.target.rsplit(".", 1)[-1], [])
                found = named if len(named) <= 8 else []
            for target in found:
                add(target, root, depth + 1)
    model.__dict__["_collate_reach"] = reach
    return reach


def _reached_collate(ctx: FileContext) -> str | None:
    """The collate a training data loader runs that reaches the function being walked."""
    view, info = ctx.analysis.view, ctx.function
    if view is None or info is None:
        return None
    fn = view._functions.get(info.key)
    if fn is None:
        return None
    return _collate_reach(view).get(fn.gkey)


# The index parameter of a `__getitem__` that takes a batch of indices (a dataset read
# with `batch_size=None` and a batch sampler): its items are batches, not examples.
_BATCH_INDEX = re.compile(r"(?:batch|indices|indexes|idxs|ids|keys|items)$", re.IGNORECASE)


def _item_methods(tree: ast.Module | None) -> frozenset[str]:
    """`__getitem__` and the methods every `self.<name>(...)` call of which in the file sits
    in a `__getitem__`, when every `__getitem__` of the file takes one index."""
    if tree is None:
        return frozenset()
    getitems = [
        node
        for node in ast_walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__getitem__"
    ]
    if not getitems:
        return frozenset()
    for node in getitems:
        params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
        if len(params) != 2 or _BATCH_INDEX.search(params[1]):
            return frozenset()
    callers: dict[str, set[str]] = {}
    called: set[int] = set()  # the `self.<name>` nodes that are called
    for function in ast_walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast_walk(function):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "self"
            ):
                callers.setdefault(node.func.attr, set()).add(function.name)
                called.add(id(node.func))
    # A method handed on (`map(self.process, xs)`, a callback) may run on anything; a nested
    # function's calls count for it and for the function around it.
    handed_on = {
        node.attr
        for node in ast_walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and id(node) not in called
    }
    items = {"__getitem__"}
    for name, where in callers.items():
        if where == {"__getitem__"} and name not in handed_on:
            items.add(name)
    return frozenset(items)


# String methods whose result is one string (`sep.join(parts)`, `template.format(...)`).
_STRING_RESULTS = frozenset(
    {"join", "format", "replace", "strip", "lstrip", "rstrip", "lower", "upper", "capitalize"}
)


def _string_expression(
    node: cst.BaseExpression, function: cst.FunctionDef | None, depth: int = 0
) -> bool:
    """Whether `node` is one string: a literal, an f-string, `sep.join(...)`,
    `"...".format(...)`, a concatenation with one of those, or a local name every assignment
    of which in `function` is one (`text = f"{a} {b}"`; `input_text = text`)."""
    if isinstance(node, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        return True
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return _string_expression(node.left, function, depth) or _string_expression(
            node.right, function, depth
        )
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.attr.value in _STRING_RESULTS
    if isinstance(node, cst.Name) and function is not None and depth < 3:
        values: list[cst.BaseExpression] = []
        for statement in walk(function.body):
            if isinstance(statement, cst.Assign):
                if any(
                    isinstance(t.target, cst.Name) and t.target.value == node.value
                    for t in statement.targets
                ):
                    values.append(statement.value)
                elif any(
                    isinstance(n, cst.Name) and n.value == node.value
                    for t in statement.targets
                    for n in walk(t.target)
                ):
                    return False  # unpacked or subscripted: not shown
            elif isinstance(statement, (cst.AugAssign, cst.AnnAssign, cst.For)) and any(
                isinstance(n, cst.Name) and n.value == node.value for n in walk(statement.target)
            ):
                if not isinstance(statement, (cst.AugAssign, cst.AnnAssign)) or (
                    statement.value is None
                ):
                    return False
                values.append(statement.value)  # `text += f"..."`: still one string
        return bool(values) and all(_string_expression(v, function, depth + 1) for v in values)
    return False


_UNSET = object()


def _default_never_used(ctx: FileContext, klass: object, field_node: cst.AnnAssign) -> bool:
    """Whether no construction of a collator class keeps its `padding` default: nothing in
    an application builds it (the scope's unbuilt classes: no call, config or string names
    it), or every construction in the project's files passes `pad_to_multiple_of=` (not
    None) or a `padding=` literal that is not padding to the longest (`"max_length"`,
    False). A class with subclasses, one a string or a config names, one handed on as a
    value or built with arguments not seen (`**kwargs`, the field given by position,
    `padding=args.padding`) keeps its finding, and so does a library's collator nothing
    builds (its users build it)."""
    view = ctx.analysis.view
    if view is None:
        return False
    model = view.model
    qualname = getattr(klass, "local_qualname", "") or getattr(klass, "name", "")
    gkey = next(
        (
            key
            for key, entry in model.classes.items()
            if entry.module is view.module and entry.summary.qualname == qualname
        ),
        None,
    )
    if gkey is None or model.subclasses(gkey):
        return False
    scope = getattr(model, "scope", None)
    if scope is not None and gkey in scope.unbuilt_classes():
        return True  # an application's collator nothing builds (no call, config or string)
    name = qualname.rsplit(".", 1)[-1]
    if any(
        text == name or text.endswith(f".{name}")
        for module in model.modules.values()
        for text in module.scope.strings
    ) or any(entry.endswith(name) for config in model.configs for _, entry in config.classes):
        return False
    # The field's position among the class's fields: a construction passing that many
    # positional arguments may set it.
    body = getattr(getattr(klass, "node", None), "body", None)
    fields = [
        statement.body[0].target
        for statement in (body.body if body is not None else ())
        if isinstance(statement, cst.SimpleStatementLine)
        and isinstance(statement.body[0], cst.AnnAssign)
    ]
    position = next(
        (i for i, target in enumerate(fields) if target is field_node.target), len(fields)
    )
    constructions = _constructions(model, name, view.module, ctx.module.code)
    if not constructions:
        return False
    for call in constructions:
        if call is None or any(k.arg is None for k in call.keywords) or len(call.args) > position:
            return False  # handed on as a value, or arguments not seen
        keywords = {k.arg: k.value for k in call.keywords}
        multiple = keywords.get("pad_to_multiple_of")
        if multiple is not None and not any(
            isinstance(n, ast.Constant) and n.value is None for n in ast_walk(multiple)
        ):
            continue  # `pad_to_multiple_of=8` (no None in it: not `8 if fp16 else None`)
        padding = keywords.get("padding")
        if (
            isinstance(padding, ast.Constant)
            and padding.value is not True
            and padding.value != "longest"
        ):
            continue  # `padding="max_length"` or False
        return False
    return True


def _constructions(
    model: object, name: str, current: object, current_text: str
) -> list[ast.Call | None]:
    """The calls of the project's files that build a class of that name (`Name(...)`,
    `mod.Name(...)`), and None for each other use of the name (handed on as a value)."""
    cache = model.__dict__.setdefault("_tpu304_constructions", {})
    if name in cache:
        return cache[name]
    found: list[ast.Call | None] = []
    for module in model.modules.values():
        if module is current:
            text = current_text
        else:
            try:
                with open(module.path, encoding="utf-8", errors="replace") as handle:
                    text = handle.read()
            except OSError:
                continue
        if name not in text:
            continue
        tree = parse_python(text)
        if tree is None:
            found.append(None)
            continue
        called: set[int] = set()
        for node in ast_walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                if (isinstance(func, ast.Name) and func.id == name) or (
                    isinstance(func, ast.Attribute) and func.attr == name
                ):
                    found.append(node)
                    called.add(id(func))
        for node in ast_walk(tree):
            if (
                (isinstance(node, ast.Name) and node.id == name)
                or (isinstance(node, ast.Attribute) and node.attr == name)
            ) and id(node) not in called:
                if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                    continue
                found.append(None)
    cache[name] = found
    return found


def _text_argument(node: cst.Call) -> cst.BaseExpression | None:
    """The text a tokenizer call encodes: its first positional argument, or `text=`."""
    for arg in node.args:
        if arg.star:
            return None
        if arg.keyword is None or arg.keyword.value == "text":
            return arg.value
    return None


def _per_item_loop(ctx: FileContext, node: cst.Call) -> bool:
    """Whether the call sits in a `for` loop over the items of a parameter of its function
    (`for item in items:`, `enumerate(batch)`, `zip(batch, ...)`, `range(len(batch))`) and
    does not read that parameter itself: it encodes one item per iteration."""
    info = ctx.function
    if info is None:
        return False
    fn = info.node
    params = {
        p.name.value
        for p in (*fn.params.posonly_params, *fn.params.params)
        if p.name.value != "self"
    }
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.For) and child is ancestor.body:
            source = _loop_source(ancestor.iter)
            if source in params and not any(
                isinstance(n, cst.Name) and n.value == source
                for arg in node.args
                for n in walk(arg.value)
            ):
                return True
        elif isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        child = ancestor
    return False


def _loop_source(iterable: cst.BaseExpression) -> str | None:
    """`items` of `items`, `enumerate(items)`, `zip(items, ...)`, `range(len(items))`."""
    if isinstance(iterable, cst.Name):
        return iterable.value
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.args:
        first = iterable.args[0].value
        name = iterable.func.value
        if name in ("enumerate", "zip", "reversed") and isinstance(first, cst.Name):
            return first.value
        if (
            name == "range"
            and len(iterable.args) == 1
            and isinstance(first, cst.Call)
            and isinstance(first.func, cst.Name)
            and first.func.value == "len"
            and len(first.args) == 1
            and isinstance(first.args[0].value, cst.Name)
        ):
            return first.args[0].value.value
    return None


def _mapped_functions(module: cst.Module) -> frozenset[str]:
    """Top-level functions the file maps over a collection one element at a time: handed to
    the builtin `map(fn, xs)`, a pool's `map`/`imap`/`imap_unordered`, directly or through a
    `partial(fn, ...)` held by a name (not `dataset.map(fn, batched=True)`, which hands
    over batches)."""
    partials: dict[str, set[str]] = {}
    for node in walk(module):
        if (
            isinstance(node, cst.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and isinstance(node.value, cst.Call)
            and _callee_name(node.value) == "partial"
            and node.value.args
            and isinstance(node.value.args[0].value, cst.Name)
        ):
            partials.setdefault(node.targets[0].target.value, set()).add(
                node.value.args[0].value.value
            )
    mapped: set[str] = set()
    for node in walk(module):
        if not isinstance(node, cst.Call) or not node.args:
            continue
        func = node.func
        per_element = (isinstance(func, cst.Name) and func.value == "map") or (
            isinstance(func, cst.Attribute)
            and (
                func.attr.value in ("imap", "imap_unordered")
                or (func.attr.value == "map" and keyword_arg(node, "batched") is None)
            )
        )
        if not per_element:
            continue
        first = node.args[0].value
        if isinstance(first, cst.Name):
            mapped.update(partials.get(first.value, {first.value}))
    return frozenset(mapped)


class DynamicPadding(_DataRule):
    """
    ## What it does
    Finds padding to the longest sequence of each batch: Hugging Face tokenizer calls with
    `padding=True` or `padding="longest"` (a receiver named like a tokenizer, or any receiver
    of `batch_encode_plus`/`encode_plus`, which only tokenizers have),
    `DataCollatorWithPadding(...)` (and the Seq2Seq / TokenClassification / LanguageModeling
    collators) without `pad_to_multiple_of` or `padding="max_length"`, and, in a collate
    function (a function named like `collate_fn`, a `*Collator` class, a function passed as
    `collate_fn=`, or a helper of the same file that one of those calls), `pad_sequence(...)`
    and hand-rolled padding to the batch's longest element: a length taken as
    `max(len(x) for x in batch)` (or the `max` of the elements' shapes, of a list of
    lengths, or over a collection of sizes: `max(s[1] for s in img_sizes)`), or one such
    maximum per dimension built by a comprehension
    (`max_sizes = [max(x.shape[d] for x in items) for d in range(x.dim())]`,
    `[max(s) for s in zip(*[x.shape for x in items])]`), that then sizes a pad, a new tensor
    or a slice (directly or through a name built from it:
    `torch.zeros(len(items), *max_sizes)`), or is handed to a padding helper
    (`pad_feats(x, max_len=longest)`). A helper of another file counts as a collate function
    when the project calls it from one. A `pad_sequence` result that the same function then
    tops up to a fixed length (`F.pad(x, (0, 0, 0, self.max_len - x.size(1)))`, copied into
    `torch.zeros(b, self.max_len)` through `out[:, : x.size(1)] = x`, or handed to a helper
    named for padding or trimming with a fixed length in an argument named for one: `x =
    pad_or_trim(x, seq_len=self.seq_len)`) is not reported: every batch leaves it with the
    same shape. Topped up to the batch's own longest length, it is. A tokenizer or
    processor call on one example is not reported either: in a map-style dataset's
    `__getitem__` (one index, not `indices`), or in a method every call of which in the file
    is `self.<method>(...)` there, padding to the longest pads nothing (the collate batches
    the items). The same holds for a call whose text is one string (an f-string, a literal,
    `sep.join(...)`, `"...".format(...)`, or a local name only such values are assigned
    to), for one inside a `for` loop over the items of its function's batch parameter
    (`for item in items:`, `enumerate(items)`, `range(len(items))`) that does not read the
    batch itself, and for one in a function the file maps over examples one at a time
    (`map(partial(to_features, ...), examples)`, a pool's `imap`; not `dataset.map(...,
    batched=True)`). A collator class's `padding = True` default is not reported when no
    construction keeps it: every construction in the project passes
    `pad_to_multiple_of=` or a `padding=` that is not the longest, or nothing in an
    application builds the class (no call, config or string names it); a library's
    collator nothing builds is still reported (its users build it). Hand-rolled padding
    also covers Python lists padded to the longest (`seq + [pad] * (longest - len(seq))`),
    a batch cut back to its longest non-pad column after a tokenizer padded it to
    `max_length` (transformers' `trim_batch(ids, pad_id)`, or `ids[:, keep]` with
    `keep = ids.ne(pad_id).any(dim=0)` in a collate or a helper one calls),
    a longest length kept by a running maximum in a loop over the batch (`longest =
    max(longest, x.size(1))`), and legacy tensor types sized with it
    (`torch.FloatTensor(n, 80, longest)`).

    Test files (under `tests/`, `test_*.py`, `conftest.py`) are not checked: their loaders
    and batch sizes are sized for fast CPU runs.

    ## Why is this bad on TPU?
    With dynamic padding every batch has the length of its longest sequence, so the
    sequence dimension changes from batch to batch. XLA compiles one graph per input shape:
    a run sees dozens to hundreds of different lengths and recompiles the whole step for each
    new one, which is slower than padding everything. Hugging Face's TPU guidance is "no
    dynamic padding": pad to a fixed `max_length`, or bucket lengths to a few sizes with
    `pad_to_multiple_of`.

    ## Example
    ```python
    def collate(self, texts):
        return self.tokenizer(texts, padding=True, truncation=True, max_length=128)
    ```

    ## Use instead
    ```python
    def collate(self, texts):
        return self.tokenizer(texts, padding="max_length", truncation=True, max_length=128)
    ```

    ## Fix safety
    When the call already passes `max_length=`, the fix pads to it (`padding="max_length"`)
    and is unsafe: batches grow to the full length (more memory and compute per step,
    and sequences longer than `max_length` are only cut if `truncation` is on). Without a
    `max_length` there is no fix: `padding="max_length"` alone pads to the tokenizer's
    `model_max_length`, which can be huge; for collators `pad_to_multiple_of=128` is shown as
    a suggestion. `pad_sequence` findings come without a fix.

    ## References
    - [Hugging Face Accelerate: training on TPUs ("no dynamic padding")](https://huggingface.co/docs/accelerate/basic_tutorials/tpu)
    - [torch_xla: recompilation and dynamic shapes](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)
    - [torch_xla troubleshooting: known performance caveats](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [pytorch/xla #1509: bucketing sequence lengths](https://github.com/pytorch/xla/issues/1509)

    ## Status
    Preview (issue 21). On sci1 it was right on its one finding (tpu1: two, in code that
    never runs on a TPU). Issue 21 added hand-rolled padding to the batch's longest element
    in collate functions and their helpers (two misses of sci1), only in functions surely
    used as collates; later the per-dimension maxima built by comprehensions, and helpers
    named like collates that a collate calls (two misses of sci7). On code read after it was
    frozen it fell below the bar twice: sci15 0 of 10 (a processor padding one example in
    `__getitem__`, fixed), then sci16all 1/0, sci18 2/0 and sci19 14 right of 27 (10 of
    the 13 wrong: a tokenizer padding one example inside a collate's per-item loop, the batch
    padded afterwards; 3: a collator's default that no construction uses): 17 right of 40
    since the sci15 change. It reports in preview (`--preview`) until a fresh read shows it
    at 95%.

    Issue 21 (branch `preview22`, tuning figures, not held out): with `--preview` on the
    read batches sci16all-sci21 it reported 53 findings, 27 right, 13 wrong and 13 off the
    TPU path. The one-string, per-item-loop and mapped-function shapes and the collator
    constructions leave 27 right, 1 wrong (a `DataCollatorWithPadding` default behind
    `if data_collator is None:` that every caller fills) and 9 off the TPU path (probe-only
    and evaluation-only collates, a CUDA-only sub-project), plus 3 right findings of the
    new hand-rolled shapes (Python-list padding and a running maximum, two labelled misses,
    and a vendored collator's label padding).
    """

    code = "TPU304"
    preview = True  # 17 of 40 right on code read after its last change (see Status)
    name = "dynamic-padding"
    summary = "Padding to the longest sequence of each batch (a recompile per length)"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = 'Pad to the fixed `max_length`: `padding="max_length"`'
    requires = (
        "padding=True",
        "padding = True",
        "padding='longest'",
        'padding="longest"',
        "padding:",
        "pad_sequence",
        "DataCollator",
        "max(",
        "trim_batch",
        ".any(dim=0)",
        ".any(0)",
    )

    VALID = (
        # A column mask outside any collate (a generation helper trimming its output), and
        # a row mask (`any(dim=1)`, which keeps the column count).
        Valid(
            "import torch\n\n\n"
            "def strip_generated(ids, pad_id):\n"
            "    keep = ids.ne(pad_id).any(dim=0)\n"
            "    return ids[:, keep]\n\n\n"
            "def collate(items):\n"
            "    ids = torch.stack([item['ids'] for item in items])\n"
            "    rows = ids.ne(0).any(dim=1)\n"
            "    return ids[rows, :]\n"
        ),
        # One example per call: a map-style dataset's item, and a helper only it calls.
        # Padding one example to its own longest pads nothing; the collate batches them.
        Valid(
            "from torch.utils.data import Dataset\n\n\n"
            "class Clips(Dataset):\n"
            "    def __getitem__(self, index):\n"
            "        wave = self.load(index)\n"
            "        return self.features(wave), self.caption(index)\n\n"
            "    def features(self, wave):\n"
            '        out = self.processor(wave, padding=True, return_tensors="pt")\n'
            "        return out.input_values[0]\n\n"
            "    def caption(self, index):\n"
            "        return self.tokenizer(self.texts[index], padding=True)\n\n"
            "    def __len__(self):\n"
            "        return len(self.texts)\n"
        ),
        Valid(
            "def collate(tokenizer, texts):\n"
            '    return tokenizer(texts, padding="max_length", max_length=128, '
            "truncation=True)\n"
        ),
        Valid(
            "from transformers import DataCollatorWithPadding\n\n"
            "collator = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=64)\n"
        ),
        # A label helper named like a collate but called by models, not passed as collate_fn.
        Valid(
            "import numpy as np\nimport torch\n\n\n"
            "def label_collate(labels):\n"
            "    max_len = max(len(label) for label in labels)\n"
            "    out = np.full((len(labels), max_len), 0)\n"
            "    return torch.tensor(out)\n"
        ),
        # The longest of a batch used for something other than a size (a statistic).
        Valid(
            "def collate(batch):\n"
            "    longest = max(len(x) for x in batch)\n"
            "    print('longest', longest)\n"
            "    return batch\n"
        ),
        # pad_sequence in a model's forward is not a collate function (TPU2xx's business).
        Valid(
            "from torch.nn.utils.rnn import pad_sequence\n\n\n"
            "class Encoder:\n    def forward(self, chunks):\n        return pad_sequence(chunks, "
            "batch_first=True)\n"
        ),
        # Tokenizing one prompt for generation (anomalib's VLM backend): inference.
        Valid(
            "class Huggingface:\n    def predict(self, image, prompt):\n"
            "        inputs = self.processor([image], [prompt], return_tensors='pt', "
            "padding=True)\n"
            "        return self.model.generate(**inputs)\n"
        ),
        # The masked-LM collator sees fixed-size blocks; its job is masking.
        Valid(
            "from transformers import DataCollatorForLanguageModeling\n\n"
            "collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)\n"
        ),
        # padding= of a convolution or an image transform is not text padding.
        Valid("import torch.nn as nn\n\nconv = nn.Conv2d(3, 8, 3, padding=True)\n"),
        # Padded to the longest, then topped up to a configured length: one shape per batch.
        Valid(
            "import torch.nn.functional as F\nfrom torch.nn.utils.rnn import pad_sequence\n\n\n"
            "class EventCollator:\n"
            "    def __init__(self, horizon: int = 64):\n"
            "        self.horizon = horizon\n\n"
            "    def __call__(self, events):\n"
            "        stacked = pad_sequence([e['x'] for e in events], batch_first=True)\n"
            "        if self.horizon is not None:\n"
            "            stacked = F.pad(stacked, (0, 0, 0, self.horizon - stacked.size(1)))\n"
            "        return stacked\n"
        ),
        # ... or handed to a helper that pads or trims it to a configured length.
        Valid(
            "from torch.nn.utils.rnn import pad_sequence\n\n\n"
            "def collate_events(batch, max_events=128, pad_id=0):\n"
            "    ids = pad_sequence(batch, batch_first=True, padding_value=pad_id)\n"
            "    ids = pad_or_trim(ids, target_length=max_events, pad_id=pad_id)\n"
            "    return ids\n\n\n"
            "def pad_or_trim(ids, target_length, pad_id):\n"
            "    ids = ids[:, :target_length]\n"
            "    return ids\n"
        ),
        # ... or copied into a buffer of a fixed length.
        Valid(
            "import torch\nfrom torch.nn.utils.rnn import pad_sequence\n\n"
            "WINDOW = 256\n\n\n"
            "def collate_fn(samples):\n"
            "    ragged = pad_sequence(samples, batch_first=True, padding_value=-1)\n"
            "    out = torch.full((ragged.shape[0], WINDOW), -1)\n"
            "    out[:, : ragged.shape[1]] = ragged\n"
            "    return out\n"
        ),
        # A per-dimension maximum in a function no collate reaches (a model helper), and one
        # in a collate function that sizes nothing (a statistic).
        Valid(
            "import torch\n\n\n"
            "def stack_features(items):\n"
            "    dims = [max(x.shape[d] for x in items) for d in range(items[0].dim())]\n"
            "    return items[0].new_zeros(len(items), *dims)\n\n\n"
            "def collate_fn(items):\n"
            "    extent = [max(x.shape[d] for x in items) for d in range(items[0].dim())]\n"
            "    print('extent', extent)\n"
            "    return torch.stack(items)\n"
        ),
        # A processor given only images pads no sequence (torchmetrics' CLIP score).
        Valid(
            "def _update(images, processor):\n"
            "    return processor(images=[i.cpu() for i in images], return_tensors='pt', "
            "padding=True)\n"
        ),
        # The longest item chosen by its length in dimension 1, but only its dimension 0 (the
        # same for every item: feature bins) is read; and a helper only a prediction loader's
        # collate reaches.
        Valid(
            "import lightning as L\nimport torch\nfrom torch.utils.data import DataLoader\n\n\n"
            "def frames_collate_fn(batch):\n"
            "    longest = max(batch, key=lambda item: item.size(1))\n"
            "    bins = longest.size(0)\n"
            "    return torch.stack([b[:, :64] for b in batch]), bins\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def encode_texts(self, texts):\n"
            "        ids = [self.vocab.lookup(t) for t in texts]\n"
            "        longest = max(len(row) for row in ids)\n"
            "        out = torch.zeros(len(ids), longest, dtype=torch.long)\n"
            "        return out\n\n"
            "    def predict_dataloader(self):\n"
            "        return DataLoader(self.ds, collate_fn=lambda b: self.encode_texts(b))\n"
        ),
        # One example per call in a collate's loop over its items, or one string (an f-string,
        # a `join`): padding it to its own longest pads nothing; the batch is padded after.
        Valid(
            "class KGDataModule:\n"
            "    def collate_fn(self, items):\n"
            "        ids = []\n"
            "        for i, item in enumerate(items):\n"
            "            enc = self.tokenizer(item.head, item.relation, padding='longest',\n"
            "                                 max_length=64, truncation=True)\n"
            "            ids.append(enc.input_ids)\n"
            "        return self.tokenizer.pad({'input_ids': ids}, padding='max_length',\n"
            "                                  max_length=64, return_tensors='pt')\n"
        ),
        Valid(
            "def encode_example(example, tokenizer, max_length):\n"
            "    prompt = f'{example.head} is a {example.relation} of'\n"
            "    return tokenizer(prompt, padding='longest', max_length=max_length)\n"
        ),
        # A feature function mapped over the examples one at a time.
        Valid(
            "from functools import partial\n\n\n"
            "def to_features(example, tokenizer, max_length):\n"
            "    return tokenizer(example.target, padding='longest', max_length=max_length)\n\n\n"
            "def build(examples, tokenizer):\n"
            "    encode = partial(to_features, tokenizer=tokenizer, max_length=32)\n"
            "    return list(map(encode, examples))\n"
        ),
        # A collator dataclass whose `padding=True` default every construction overrides.
        Valid(
            "from dataclasses import dataclass\n\n\n"
            "@dataclass\n"
            "class PairCollator:\n"
            "    tokenizer: object\n"
            "    padding: bool = True\n"
            "    pad_to_multiple_of: int = None\n\n"
            "    def __call__(self, features):\n"
            "        return self.tokenizer.pad(features, padding=self.padding,\n"
            "                                  pad_to_multiple_of=self.pad_to_multiple_of)\n\n\n"
            "def make_collator(tokenizer):\n"
            "    return PairCollator(tokenizer, padding='longest', pad_to_multiple_of=8)\n"
        ),
    )
    INVALID = (
        # transformers' `trim_batch` in a collate: each batch cut to its longest column.
        Invalid(
            "import torch\nfrom transformers.tokenization_utils import trim_batch\n\n\n"
            "class Pairs:\n"
            "    def collate_fn(self, items):\n"
            "        ids = torch.stack([item['ids'] for item in items])\n"
            "        return {'ids': trim_batch(ids, self.pad_id)}\n",
            line=8,
            message="`trim_batch(...)` (transformers) in collate function `collate_fn` cuts",
        ),
        # The same trim written out in a helper the collate calls: a column mask of what is
        # not padding.
        Invalid(
            "import torch\n\n\n"
            "def drop_pad_columns(ids, mask, pad_id):\n"
            "    keep = ids.ne(pad_id).any(dim=0)\n"
            "    return ids[:, keep], mask[:, keep]\n\n\n"
            "def collate(items):\n"
            "    ids = torch.stack([item['ids'] for item in items])\n"
            "    mask = torch.stack([item['mask'] for item in items])\n"
            "    return drop_pad_columns(ids, mask, 0)\n",
            line=6,
            message="in collate function `drop_pad_columns` (called from `collate`)",
        ),
        # Python lists padded to the longest, and a longest length kept by a running maximum
        # sizing legacy tensor types.
        Invalid(
            "class SmilesCollator:\n"
            "    def __call__(self, seqs):\n"
            "        longest = max([len(s) for s in seqs])\n"
            "        return [s + [0] * (longest - len(s)) for s in seqs]\n",
            line=3,
        ),
        Invalid(
            "import torch\n\n\n"
            "class SpeechCollate:\n"
            "    def __call__(self, items):\n"
            "        max_frames = 0\n"
            "        for item in items:\n"
            "            max_frames = max(max_frames, item.frames.size(1))\n"
            "        out = torch.FloatTensor(len(items), 80, max_frames)\n"
            "        return out.zero_()\n",
            line=8,
        ),
        # The same collator built with its default kept.
        Invalid(
            "from dataclasses import dataclass\n\n\n"
            "@dataclass\n"
            "class PairCollator:\n"
            "    tokenizer: object\n"
            "    padding: bool = True\n"
            "    pad_to_multiple_of: int = None\n\n"
            "    def __call__(self, features):\n"
            "        return self.tokenizer.pad(features, padding=self.padding,\n"
            "                                  pad_to_multiple_of=self.pad_to_multiple_of)\n\n\n"
            "def make_collator(tokenizer):\n"
            "    return PairCollator(tokenizer, padding='longest')\n",
            line=7,
        ),
        # The loop's batch-level padding, and a loop over a list that is not the items.
        Invalid(
            "class KGDataModule:\n"
            "    def collate_fn(self, items):\n"
            "        ids = [item.ids for item in items]\n"
            "        for key in ('query', 'answer'):\n"
            "            texts = [getattr(item, key) for item in items]\n"
            "            ids.append(self.tokenizer(texts, padding=True).input_ids)\n"
            "        return self.tokenizer.pad({'input_ids': ids}, padding='longest')\n",
            count=2,
        ),
        # A `__getitem__` that reads a batch of indices (a batch sampler, `batch_size=None`):
        # its tokenizer call pads a batch.
        Invalid(
            "from torch.utils.data import Dataset\n\n\n"
            "class Pages(Dataset):\n"
            "    def __getitem__(self, indices):\n"
            "        texts = [self.texts[i] for i in indices]\n"
            '        return self.tokenizer(texts, padding=True, return_tensors="pt")\n',
            line=7,
        ),
        # The helper also serves the collate, which pads a batch.
        Invalid(
            "from torch.utils.data import Dataset\n\n\n"
            "class Clips(Dataset):\n"
            "    def __getitem__(self, index):\n"
            "        return self.features(self.waves[index])\n\n"
            "    def collate(self, items):\n"
            "        return self.features([w for w, _ in items])\n\n"
            "    def features(self, wave):\n"
            '        return self.processor(wave, padding=True, return_tensors="pt")\n',
            line=12,
        ),
        # A helper that pads or trims to a length read from the batch: still its longest.
        Invalid(
            "from torch.nn.utils.rnn import pad_sequence\n\n\n"
            "def collate_events(batch, pad_id=0):\n"
            "    ids = pad_sequence(batch, batch_first=True, padding_value=pad_id)\n"
            "    longest = max(len(b) for b in batch)\n"
            "    ids = pad_or_trim(ids, target_length=longest, pad_id=pad_id)\n"
            "    return ids\n",
            line=5,
        ),
        Invalid(
            "def collate(self, texts):\n"
            "    return self.tokenizer(texts, padding=True, truncation=True, max_length=128, "
            'return_tensors="pt")\n',
            expected_fix="def collate(self, texts):\n"
            '    return self.tokenizer(texts, padding="max_length", truncation=True, '
            'max_length=128, return_tensors="pt")\n',
            applicability=Applicability.UNSAFE,
            line=2,
        ),
        # NeMo g2p collate: the quote style is kept.
        Invalid(
            "class G2PDataset:\n    def _collate_fn(self, batch):\n"
            "        return self.tokenizer(batch, padding='longest', max_length=self.max_len, "
            "truncation=True)\n",
            expected_fix="class G2PDataset:\n    def _collate_fn(self, batch):\n"
            "        return self.tokenizer(batch, padding='max_length', max_length=self.max_len, "
            "truncation=True)\n",
        ),
        # No max_length: reported without a fix.
        Invalid(
            "class DM:\n    def setup(self, stage):\n"
            '        self.enc = self.tokenizer(self.texts, padding="longest")\n',
            message='`padding="longest"`',
        ),
        # A tokenizer kept under another name: its methods say what it is.
        Invalid(
            "class ProteinCollater:\n    def __call__(self, sequences):\n"
            "        return self.vocab.batch_encode_plus(\n"
            '            sequences, padding="longest", return_tensors="pt"\n        )\n',
            line=4,
        ),
        # Captions with the images: the text is padded per batch.
        Invalid(
            "def _update(images, captions, processor):\n"
            "    return processor(text=captions, images=images, return_tensors='pt', "
            "padding=True)\n",
            line=2,
        ),
        Invalid(
            "from transformers import DataCollatorWithPadding\n\n"
            "collator = DataCollatorWithPadding(tokenizer=tokenizer)\n",
            expected_suggestion="from transformers import DataCollatorWithPadding\n\n"
            "collator = DataCollatorWithPadding(tokenizer=tokenizer, pad_to_multiple_of=128)\n",
            applicability=Applicability.DISPLAY_ONLY,
        ),
        Invalid(
            "from torch.nn.utils.rnn import pad_sequence\n\n\n"
            "def collate_fn(batch):\n"
            "    xs, ys = zip(*batch)\n"
            "    return pad_sequence(xs, batch_first=True), torch.stack(ys)\n",
            line=6,
            message="collate function `collate_fn`",
        ),
        # lightning-transformers multiple_choice/utils.py: a collator dataclass.
        Invalid(
            "from dataclasses import dataclass\n\n\n"
            "@dataclass\nclass DataCollatorForMultipleChoice:\n"
            "    tokenizer: object\n"
            "    padding: bool = True\n"
            "    max_length: int = None\n",
            line=7,
        ),
        # Hand-rolled padding to the batch's longest element, in a helper of the collate.
        Invalid(
            "import torch\nimport torch.nn.functional as F\n\n\n"
            "class Pipeline:\n"
            "    def collate_fn(self, samples):\n"
            "        return self._stack([s['ids'] for s in samples])\n\n"
            "    def _stack(self, seqs):\n"
            "        longest = max(len(s) for s in seqs)\n"
            "        return torch.stack([F.pad(s, (0, longest - len(s))) for s in seqs])\n",
            line=10,
            message="(called from `collate_fn`) pads every batch to its own longest element",
        ),
        Invalid(
            "import torch\n\n\n"
            "def collate(batch, pad_id: int = 0):\n"
            "    lengths = [len(x) for x in batch]\n"
            "    max_len = max(lengths)\n"
            "    out = torch.full((len(batch), max_len), pad_id)\n"
            "    for i, x in enumerate(batch):\n"
            "        out[i, : len(x)] = x\n"
            "    return out\n",
            line=6,
        ),
        # The longest length handed to a padding helper, by keyword.
        Invalid(
            "def collate_fn(batch):\n"
            "    longest = max([len(item['mask']) for item in batch])\n"
            "    return [pad_features(item, max_len=longest) for item in batch]\n",
            line=2,
        ),
        # Topped up again, but to the batch's own longest element: still one shape per length.
        Invalid(
            "import torch.nn.functional as F\nfrom torch.nn.utils.rnn import pad_sequence\n\n\n"
            "def collate_fn(pairs):\n"
            "    src = pad_sequence([p[0] for p in pairs], batch_first=True)\n"
            "    longest = max(len(p[1]) for p in pairs)\n"
            "    src = F.pad(src, (0, longest - src.size(1)))\n"
            "    return src\n",
            line=6,
        ),
        # The batch's maximum per dimension, through a name built from it, in a helper of
        # a collate function.
        Invalid(
            "def batch_grids(grids):\n"
            "    rank = grids[0].dim()\n"
            "    widest = [max(g.size(d) for g in grids) for d in range(rank)]\n"
            "    shape = (len(grids),) + tuple(widest)\n"
            "    out = grids[0].new_zeros(size=shape)\n"
            "    for i, g in enumerate(grids):\n"
            "        out[i][tuple(slice(0, n) for n in g.shape)] = g\n"
            "    return out\n\n\n"
            "def grid_collate(samples):\n"
            "    return {'grid': batch_grids([s['grid'] for s in samples])}\n",
            line=3,
            message="`batch_grids` (called from `grid_collate`) pads every batch",
        ),
        # ... zipped from the shapes, and over a collection of sizes.
        Invalid(
            "import torch\n\n\n"
            "class Images:\n"
            "    def collate(self, batch):\n"
            "        extent = [max(s) for s in zip(*[x.shape for x in batch])]\n"
            "        out = torch.zeros(len(batch), *extent)\n"
            "        for i, x in enumerate(batch):\n"
            "            out[i, : x.shape[0], : x.shape[1]] = x\n"
            "        return out\n\n"
            "    def collate_pairs(self, batch):\n"
            "        sizes = [x.shape for x in batch]\n"
            "        tallest = max([s[0] for s in sizes])\n"
            "        return torch.zeros(len(batch), tallest)\n",
            count=2,
            line=6,
        ),
        # A helper named like a collate, called by the collate function.
        Invalid(
            "import torch\n\n\n"
            "def collate_padded(items):\n"
            "    extent = [max(x.shape[d] for x in items) for d in range(items[0].dim())]\n"
            "    return items[0].new_zeros(len(items), *extent)\n\n\n"
            "def speech_collate(batch):\n"
            "    return {'audio': collate_padded([b['audio'] for b in batch])}\n",
            line=5,
            message="collate function `collate_padded` pads",
        ),
        # A function passed as collate_fn=.
        Invalid(
            "import torch\nfrom torch.utils.data import DataLoader\n\n\n"
            "def merge(batch):\n"
            "    return torch.nn.utils.rnn.pad_sequence(batch, batch_first=True)\n\n\n"
            "loader = DataLoader(ds, batch_size=32, collate_fn=merge)\n",
            line=6,
        ),
        # The longest item picked by its size in one dimension (`max(..., key=...)`), then
        # that size read and a zero tensor of it filled per item.
        Invalid(
            "import torch\n\n\n"
            "def frames_collate_fn(batch):\n"
            "    def frames(item):\n"
            "        return item[0].size(1)\n"
            "    longest = max(batch, key=frames)[0]\n"
            "    bins = longest.size(0)\n"
            "    width = longest.size(1)\n"
            "    out = torch.zeros(len(batch), bins, width)\n"
            "    for i, (feats, _) in enumerate(batch):\n"
            "        out[i, :, : feats.size(1)] = feats\n"
            "    return out\n",
            line=9,
            message="`width = longest.size(1)` in collate function `frames_collate_fn`",
        ),
        # A helper the training loader's collate (a lambda calling a method) reaches, padding
        # token ids to the batch's longest by hand.
        Invalid(
            "import lightning as L\nimport torch\nfrom torch.utils.data import DataLoader\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def encode_texts(self, texts):\n"
            "        ids = [self.vocab.lookup(t) for t in texts]\n"
            "        longest = max(len(row) for row in ids)\n"
            "        out = torch.zeros(len(ids), longest, dtype=torch.long)\n"
            "        for i, row in enumerate(ids):\n"
            "            out[i, : len(row)] = torch.tensor(row)\n"
            "        return out\n\n"
            "    def make_batch(self, items):\n"
            "        return self.encode_texts([x['text'] for x in items])\n\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.ds, collate_fn=lambda b: self.make_batch(b))\n",
            line=9,
            message="in collate function `encode_texts` (reached from `make_batch`)",
        ),
    )

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        syntax = view.module.syntax
        if syntax is None:
            return True
        if _NOT_TRAINING.search(view.path.replace("\\", "/").rsplit("/", 1)[-1]):
            # `_not_training()` for every node of the file: only a collator's `padding`
            # field (visit_AnnAssign) can report.
            return "padding" in syntax.class_fields
        if not syntax.calls.isdisjoint(_PADDING_COLLATORS):
            return True  # transformers' collators
        if "padding" in syntax.literal_keywords and (
            _TOKENIZER_TEXT.search(source) or not syntax.calls.isdisjoint(_TOKENIZER_ONLY_METHODS)
        ):
            return True  # `padding=True` / `"longest"` of a tokenizer call (_is_tokenizer_call)
        pads = (
            "padding" in syntax.class_fields  # collator dataclasses
            or "pad_sequence" in syntax.calls
        )
        # trimming to the longest non-pad column: `trim_batch(ids, pad_id)`, `x[:, keep]`
        # with `keep = ids.ne(pad_id).any(dim=0)` (visit_Call, visit_Subscript)
        trims = "trim_batch" in syntax.calls or (
            "any" in syntax.calls and _COLUMN_ANY.search(source) is not None
        )
        # hand-rolled padding: `name = max(len(x) for x in batch)` (visit_Assign)
        if not (pads or trims or "max" in syntax.calls):
            return False
        # The rest reports only in a collate function or a collator class, whose name (or
        # the `collate_fn=` keyword naming it) is in the text, or in a helper of this file
        # that one in another file calls (`_is_collate_helper`).
        if _COLLATE_NAME.search(source) is None and not any(
            _SURE_COLLATE.search(name)
            or (name == "__call__" and owner and _COLLATE_NAME.search(owner.rsplit(".", 1)[-1]))
            for function in view.module.functions
            for name, owner in view.callers(function.key)
        ):
            # hand-rolled padding in a function a training loader's collate reaches through
            # other files (`collate_fn=lambda s: self.prepare_sample(s)` ... a tokenizing
            # helper of an encoder)
            reach = _collate_reach(view)
            return (
                ("max" in syntax.calls or trims)
                and any(
                    view._functions.get(function.key) is not None
                    and view._functions[function.key].gkey in reach
                    for function in view.module.functions
                )
                and (trims or _assigns_longest_length(source))
            )
        if "padding" in syntax.class_fields:
            return True  # a collator's `padding` field (visit_AnnAssign)
        # `pad_sequence(...)` and hand-rolled padding report only inside what
        # `_collate_function` finds, which needs a collate function defined in this file.
        if not _defines_collate_function(source):
            reach = _collate_reach(view)
            return any(
                view._functions.get(function.key) is not None
                and view._functions[function.key].gkey in reach
                for function in view.module.functions
            ) and ("pad_sequence" in syntax.calls or trims or _assigns_longest_length(source))
        return "pad_sequence" in syntax.calls or trims or _assigns_longest_length(source)

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._collate_names: set[str] | None = None
        self._collate_helpers: dict[int, str] | None = None
        self._reported_functions: set[int] = set()
        self._longest_items: dict[int, dict[str, int]] = {}

    def _not_training(self) -> bool:
        ctx = self.ctx
        stem = ctx.path.replace("\\", "/").rsplit("/", 1)[-1]
        if _NOT_TRAINING.search(stem):
            return True
        info = ctx.function
        while info is not None:
            if _NOT_TRAINING.search(info.name):
                return True
            info = info.parent
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._skip or len(node.targets) != 1:
            return
        target = node.targets[0].target
        if not isinstance(target, cst.Name):
            return
        function = self.ctx.function
        scope = id(function.node) if function is not None else 0
        if _longest_item(node.value) and function is not None:
            # `longest = max(batch, key=lambda s: s[0].size(1))[0]`: its size in the
            # dimension the key compares (next) is the batch's longest length
            dim = _key_dim(node.value, function.node)
            if dim is not None:
                self._longest_items.setdefault(scope, {})[target.value] = dim
            return
        if not (
            _batch_maximum(node.value)
            or _size_of(node.value, self._longest_items.get(scope, {}))
            or self._running_maximum(node, target.value)
        ):
            return
        collate = self._collate_function()
        if collate is None or self._not_training() or not self._surely_collate(collate[0]):
            return
        function, name = collate
        info = self.ctx.function
        body = info.node.body if info is not None else function.body
        if id(function) in self._reported_functions or not _sizes_something(body, target.value):
            return
        if _rounded_to_multiple(body, target.value):
            return  # bucketed: `longest = (longest + m - 1) // m * m`
        self._reported_functions.add(id(function))
        self.report(
            node,
            f"`{code(self.ctx, node)}` in collate function {name} pads every batch to its own "
            "longest element: each new length is a new input shape and XLA compiles the step "
            "again; pad to a fixed maximum length (the tokenizer's `max_length`, or a bucket of "
            "a few sizes)",
        )

    def _running_maximum(self, node: cst.Assign, target: str) -> bool:
        """`longest = max(longest, item.size(1))` (or `max(longest, length)`) in the body of a
        `for` loop: the batch's longest length, kept as the loop goes."""
        value = node.value
        if not (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Name)
            and value.func.value == "max"
            and len(value.args) == 2
            and all(a.keyword is None and not a.star for a in value.args)
        ):
            return False
        first, second = (a.value for a in value.args)
        if isinstance(second, cst.Name) and second.value == target:
            first, second = second, first
        if not (isinstance(first, cst.Name) and first.value == target):
            return False
        if not (
            _reads_sizes(second)
            or (isinstance(second, cst.Name) and _SIZES_NAME.search(second.value))
        ):
            return False
        return any(isinstance(a, cst.For) for a in self.ctx.ancestors(node))

    def visit_Call(self, node: cst.Call) -> None:
        name = _callee_name(node)
        if name is None or self._skip:
            return
        if name in _PADDING_COLLATORS:
            if not self._not_training():
                self._collator(node, name)
            return
        if name == "pad_sequence":
            if not self._not_training():
                self._pad_sequence(node)
            return
        if name == "trim_batch":
            qualified = self.ctx.qualify(node.func) or ""
            if qualified.startswith("transformers.") and not self._not_training():
                self._trimmed(node, "`trim_batch(...)` (transformers)")
            return
        padding = keyword_arg(node, "padding")
        if (
            padding is not None
            and self._is_tokenizer_call(node)
            and _pads_a_sequence(node)
            and not self._not_training()
            and not self._one_example_per_call()
            and not self._one_text(node)
        ):
            self._tokenizer(node, padding)

    def _one_example_per_call(self) -> bool:
        """Whether the call runs on one example: in a map-style dataset's `__getitem__`, or in
        a method every call of which in the file is `self.<method>(...)` inside one. Padding
        to the longest of one example pads nothing; the collate (or the model) batches the
        items, and that is where lengths would differ."""
        info = self.ctx.function
        if info is None:
            return False
        methods = self.__dict__.get("_item_methods")
        if methods is None:
            methods = _item_methods(self.ctx.ast_tree)
            self.__dict__["_item_methods"] = methods
        if info.name in methods:
            return True
        mapped = self.__dict__.get("_mapped")
        if mapped is None:
            mapped = self.__dict__["_mapped"] = _mapped_functions(self.ctx.module)
        return info.parent is None and info.cls is None and info.name in mapped

    def _one_text(self, node: cst.Call) -> bool:
        """Whether the call encodes one text (or one pair): its text is a single string (an
        f-string, `sep.join(...)`, a name only such values are assigned to), or it runs once
        per item of a collate's loop over the batch. Padding one sequence to the longest
        pads nothing; what pads the batch comes after."""
        text = _text_argument(node)
        function = self.ctx.function.node if self.ctx.function is not None else None
        if text is not None and _string_expression(text, function):
            return True
        return _per_item_loop(self.ctx, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        # `padding: Union[bool, str] = True` of a collator dataclass (the Hugging Face
        # example `DataCollatorForMultipleChoice`).
        ctx = self.ctx
        target = node.target
        info = ctx.klass
        if (
            self._skip
            or not isinstance(target, cst.Name)
            or target.value != "padding"
            or node.value is None
            or not (is_true(node.value) or string_value(node.value) == "longest")
            or ctx.function is not None
            or info is None
            or not _COLLATE_NAME.search(info.name)
        ):
            return
        if _default_never_used(ctx, info, node):
            return
        self.report(
            node.value,
            f"`padding = {code(ctx, node.value)}` makes collator `{info.name}` pad every batch "
            "to its own longest sequence by default: each new length is a new input shape and "
            'XLA compiles the step again; default to `"max_length"` with a `max_length`, or set '
            "`pad_to_multiple_of`",
        )

    def _is_tokenizer_call(self, node: cst.Call) -> bool:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _TOKENIZER_ONLY_METHODS:
            return True  # named as only Hugging Face tokenizers name them, whatever the receiver
        if isinstance(func, cst.Attribute) and func.attr.value in _TOKENIZER_METHODS:
            func = func.value
        text = code(self.ctx, func).lower()
        last = text.rsplit(".", 1)[-1]
        return "tokenizer" in last or last in ("tok", "processor")

    def _tokenizer(self, node: cst.Call, padding: cst.Arg) -> None:
        value = padding.value
        literal = string_value(value)
        if not (is_true(value) or literal == "longest"):
            return
        ctx = self.ctx
        written = f"padding={code(ctx, value)}"
        message = (
            f"`{written}` pads every batch to its own longest sequence: each new length is a new "
            "input shape and XLA compiles the step again; pad to a fixed length "
            '(`padding="max_length", max_length=...`) or bucket lengths with `pad_to_multiple_of`'
        )
        if keyword_arg(node, "max_length") is not None:
            single = isinstance(value, cst.SimpleString) and value.value.startswith("'")
            quote = "'" if single else '"'
            self.report(
                padding,
                message,
                replacement=padding.with_changes(
                    value=cst.SimpleString(f"{quote}max_length{quote}")
                ),
            )
        else:
            self.report(padding, message)

    def _collator(self, node: cst.Call, name: str) -> None:
        qualified = self.ctx.qualify(node.func)
        if qualified is not None and not qualified.startswith("transformers."):
            return
        if has_star_kwargs(node):
            return
        multiple = keyword_arg(node, "pad_to_multiple_of")
        if multiple is not None and not is_none(multiple.value):
            return
        padding = keyword_arg(node, "padding")
        if padding is not None and not (
            is_true(padding.value) or string_value(padding.value) == "longest"
        ):
            return
        message = (
            f"`{name}(...)` without `pad_to_multiple_of` pads every batch to its own longest "
            "sequence: each new length is a new input shape and XLA compiles the step again; "
            'pass `padding="max_length", max_length=...` or bucket with `pad_to_multiple_of=128`'
        )
        if keyword_arg(node, "max_length") is not None:
            new = (
                replace_arg(
                    node, padding, [padding.with_changes(value=cst.SimpleString('"max_length"'))]
                )
                if padding is not None
                else add_keyword(node, "padding", '"max_length"')
            )
            self.report(node, message, replacement=new)
            return
        self.report(
            node,
            message,
            replacement=add_keyword(node, "pad_to_multiple_of", "128"),
            applicability=Applicability.DISPLAY_ONLY,
            fix_message="Bucket lengths: `pad_to_multiple_of=128`",
        )

    def _pad_sequence(self, node: cst.Call) -> None:
        ctx = self.ctx
        qualified = ctx.qualify(node.func)
        if qualified is not None and qualified not in (
            "torch.nn.utils.rnn.pad_sequence",
            "torch.nn.utils.rnn.rnn.pad_sequence",
        ):
            return
        collate = self._collate_function()
        if collate is None:
            return
        function, name = collate
        if id(function) in self._reported_functions:
            return  # one finding per collate function
        body = ctx.function.node.body if ctx.function is not None else function.body
        padded = next(
            (
                statement.targets[0].target.value
                for statement in walk(body)
                if isinstance(statement, cst.Assign)
                and statement.value is node
                and len(statement.targets) == 1
                and isinstance(statement.targets[0].target, cst.Name)
            ),
            None,
        )
        if padded is not None and _repadded_to_fixed_length(body, padded):
            return  # padded to the longest, then to a fixed length: one shape for every batch
        self._reported_functions.add(id(function))
        count = sum(
            1
            for call in walk(function.body)
            if isinstance(call, cst.Call) and _callee_name(call) == "pad_sequence"
        )
        calls = f" (and {count - 1} more in it)" if count > 1 else ""
        self.report(
            node,
            f"`pad_sequence(...)` in collate function {name}{calls} pads every batch to its "
            "own longest sequence: each new length is a new input shape and XLA compiles the "
            "step again; pad to a fixed maximum length (or bucket lengths to a few sizes)",
        )

    def visit_Subscript(self, node: cst.Subscript) -> None:
        """`ids[:, keep]` with a column mask `keep = ids.ne(pad_id).any(dim=0)`: the batch cut
        to its longest non-pad column."""
        if self._skip or len(node.slice) < 2:
            return
        first = node.slice[0].slice
        if not (
            isinstance(first, cst.Slice)
            and first.lower is None
            and first.upper is None
            and first.step is None
        ):
            return
        index = node.slice[1].slice
        if not isinstance(index, cst.Index):
            return
        mask = index.value
        if isinstance(mask, cst.Name):
            info = self.ctx.function
            if info is None:
                return
            values = [
                statement.value
                for statement in walk(info.node.body)
                if isinstance(statement, cst.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0].target, cst.Name)
                and statement.targets[0].target.value == mask.value
            ]
            if len(values) != 1:
                return
            mask = values[0]
        if not _column_any(self.ctx, mask) or self._not_training():
            return
        statement = next(
            (a for a in self.ctx.ancestors(node) if isinstance(a, cst.BaseStatement)), node
        )
        # One finding per statement: the branches of a helper (`if mask is None: return
        # ids[:, keep]` / `return ids[:, keep], mask[:, keep]`) are separate paths.
        self._trimmed(node, f"`{code(self.ctx, node)}`", statement)

    def _trimmed(self, node: cst.CSTNode, shown: str, statement: cst.CSTNode | None = None) -> None:
        """A batch trimmed to its longest non-pad column in a collate function (or a helper
        one calls): one finding per function (per statement for `ids[:, keep]`)."""
        collate = self._collate_function()
        if collate is None or not self._surely_collate(collate[0]):
            return
        function, name = collate
        key = id(statement) if statement is not None else id(function)
        if key in self._reported_functions:
            return
        self._reported_functions.add(key)
        self.report(
            node,
            f"{shown} in collate function {name} cuts every batch to its own longest "
            "non-pad column: each new length is a new input shape and XLA compiles the step "
            "again; keep the fixed `max_length` the tokenizer padded to (or bucket lengths to a "
            "few sizes)",
        )

    def _surely_collate(self, function: cst.FunctionDef) -> bool:
        """For hand-rolled padding, a stricter test than a name that mentions collating
        (`label_collate`, a label helper models call): a function passed as `collate_fn=`,
        one named `collate`/`collate_fn`/`*_collate_fn`, a method of a class, a collator's
        `__call__`, or a helper one of those calls."""
        name = function.name.value
        if name in (self._collate_names or set()) or _SURE_COLLATE.search(name):
            return True
        info = self.ctx.function
        if info is not None and info.node is function and _reached_collate(self.ctx):
            return True
        if self._collate_helpers and id(function) in self._collate_helpers:
            return True
        info = self.ctx.analysis.function(function)
        if info is not None and info.cls is not None:
            return True
        # A helper of another file that a collate function calls (`batchify_*` in a utils
        # module, called from a collator's `__call__`).
        view = self.ctx.analysis.view
        return bool(
            info is not None
            and view is not None
            and any(
                _SURE_COLLATE.search(name)
                or (name == "__call__" and cls and _COLLATE_NAME.search(cls.rsplit(".", 1)[-1]))
                for name, cls in view.callers(info.key)
            )
        )

    def _collate_function(self) -> tuple[cst.FunctionDef, str] | None:
        ctx = self.ctx
        if self._collate_names is None:
            self._collate_names = set()
            for node in walk(ctx.module):
                keyword = node.keyword if isinstance(node, cst.Arg) else None
                if keyword is not None and keyword.value == "collate_fn":
                    value = node.value
                    if isinstance(value, cst.Name):
                        self._collate_names.add(value.value)
                    elif isinstance(value, cst.Attribute):
                        self._collate_names.add(value.attr.value)
        if self._collate_helpers is None:
            self._collate_helpers = _collate_helpers(ctx, self._collate_names)
        info = ctx.function
        while info is not None:
            if _COLLATE_NAME.search(info.name) or info.name in self._collate_names:
                return info.node, f"`{info.name}`"
            caller = self._collate_helpers.get(id(info.node))
            if caller is not None:
                return info.node, f"`{info.name}` (called from `{caller}`)"
            if (
                info.name == "__call__"
                and info.cls is not None
                and _COLLATE_NAME.search(info.cls.name)
            ):
                return info.node, f"`{info.cls.name}.__call__`"
            info = info.parent
        root = _reached_collate(ctx)
        if root is not None and ctx.function is not None:
            name = ctx.function.name
            reached = f"`{name}`" if name == root else f"`{name}` (reached from `{root}`)"
            return ctx.function.node, reached
        return None
