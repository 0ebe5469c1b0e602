"""A file's text read with Python's own parser, the way the analyses that work on `ast` read it.

One function, so the value inference and the rewrites that read the file being checked with
`ast` can share one tree (FileContext.ast_tree) instead of parsing the text once each.
"""

from __future__ import annotations

import ast
import warnings


def parse_python(text: str) -> ast.Module | None:
    """The module's `ast` tree, or None when Python rejects the text (a syntax error, a null
    byte) or it is too deep or too big to parse. Warnings (invalid escapes) are silenced: the
    checked code is not ours to warn about."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
