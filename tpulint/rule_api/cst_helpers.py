"""Small, formatting-preserving libcst edits that rule fixes share (arguments of calls)."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst


def keyword_arg(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def _comma_like(call: cst.Call, index: int) -> cst.Comma:
    """A comma styled like the ones around `index` (keeps one-arg-per-line layouts)."""
    args = call.args
    for neighbour in (index - 1, index, index + 1):
        if 0 <= neighbour < len(args) and isinstance(args[neighbour].comma, cst.Comma):
            return args[neighbour].comma  # type: ignore[return-value]
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def make_arg(keyword: str, value: cst.BaseExpression | str) -> cst.Arg:
    if isinstance(value, str):
        value = cst.parse_expression(value)
    return cst.Arg(
        keyword=cst.Name(keyword),
        value=value,
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )


def replace_arg(call: cst.Call, old: cst.Arg, new_args: Sequence[cst.Arg]) -> cst.Call:
    """`call` with `old` replaced by `new_args` (none: removed), keeping comma layout."""
    args = list(call.args)
    index = next(i for i, a in enumerate(args) if a is old)
    is_last = index == len(args) - 1
    if not new_args:
        del args[index]
        if is_last and args:
            # The new last argument takes over the removed one's trailing comma/whitespace.
            args[-1] = args[-1].with_changes(comma=old.comma)
        return call.with_changes(args=args)
    comma = _comma_like(call, index)
    built: list[cst.Arg] = []
    for position, arg in enumerate(new_args):
        last_of_new = position == len(new_args) - 1
        if last_of_new:
            arg = arg.with_changes(comma=old.comma)
            if isinstance(arg.equal, cst.AssignEqual) and isinstance(old.equal, cst.AssignEqual):
                arg = arg.with_changes(equal=old.equal)
        else:
            arg = arg.with_changes(comma=comma)
            if isinstance(arg.equal, cst.AssignEqual) and isinstance(old.equal, cst.AssignEqual):
                arg = arg.with_changes(equal=old.equal)
        built.append(arg)
    args[index : index + 1] = built
    return call.with_changes(args=args)


def rename_keyword(call: cst.Call, old: cst.Arg, keyword: str) -> cst.Call:
    return replace_arg(call, old, [old.with_changes(keyword=cst.Name(keyword))])


def add_keywords(call: cst.Call, pairs: Sequence[tuple[str, cst.BaseExpression | str]]) -> cst.Call:
    """`call` with `keyword=value` arguments appended, keeping its layout: the separator
    used between the existing arguments (one per line stays one per line), and the trailing
    comma and closing-parenthesis whitespace of the last argument."""
    args = list(call.args)
    new = [make_arg(keyword, value) for keyword, value in pairs]
    if not new:
        return call
    if not args:
        spaced = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        return call.with_changes(args=[*(a.with_changes(comma=spaced) for a in new[:-1]), new[-1]])
    last = args[-1]
    separator = next((a.comma for a in args[:-1] if isinstance(a.comma, cst.Comma)), None)
    if separator is None:
        if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
            # f(\n    a,\n): the new arguments go on their own lines, indented like `a`.
            separator = cst.Comma(whitespace_after=call.whitespace_before_args)
        else:
            separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if last.keyword is not None and isinstance(last.equal, cst.AssignEqual):
        new = [a.with_changes(equal=last.equal) for a in new]
    new = [a.with_changes(comma=separator) for a in new]
    new[-1] = new[-1].with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
    args[-1] = last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace(""))
    return call.with_changes(args=[*args, *new])


def add_keyword(call: cst.Call, keyword: str, value: cst.BaseExpression | str) -> cst.Call:
    """`call` with `keyword=value` appended after the last argument (see add_keywords)."""
    return add_keywords(call, [(keyword, value)])


def string_value(node: cst.BaseExpression) -> str | None:
    """The value of a plain string literal, else None."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def int_value(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    return None


def strip_call_suffix(call: cst.Call) -> cst.BaseExpression:
    """`x.item()` -> `x` (the receiver of a no-argument method call), keeping parentheses
    the call had around it."""
    assert isinstance(call.func, cst.Attribute)
    receiver = call.func.value
    if call.lpar:
        receiver = receiver.with_changes(
            lpar=[*call.lpar, *receiver.lpar], rpar=[*receiver.rpar, *call.rpar]
        )
    return receiver
