"""A file's text read with Python's own parser, the way the analyses that work on `ast` read it.

One function, so the rules' screens, the value inference and the rewrites that read the file
being checked with `ast` can share one tree (FileContext.ast_tree) instead of parsing the text
once each: the last text parsed and its tree are kept (one slot, matched by identity, so a
screen's parse is the one the checked file's analysis reuses, and no other file's tree is held).
Nothing mutates these trees.
"""

from __future__ import annotations

import ast
import warnings

_LAST: list[tuple[str, ast.Module | None]] = []  # the last text parsed and its tree


def parse_python(text: str) -> ast.Module | None:
    """The module's `ast` tree, or None when Python rejects the text (a syntax error, a null
    byte) or it is too deep or too big to parse. Warnings (invalid escapes) are silenced: the
    checked code is not ours to warn about. The same text object as the last call's gets the
    same tree."""
    if _LAST and _LAST[0][0] is text:
        return _LAST[0][1]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree: ast.Module | None = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    _LAST[:] = [(text, tree)]
    return tree
