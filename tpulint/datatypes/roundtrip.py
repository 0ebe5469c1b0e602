"""Valid Python that libcst does not reproduce byte for byte, and how the engine still checks
and fixes it exactly.

libcst 1.x loses two things Python's tokenizer accepts:

- a form feed in a line's indentation (Python resets the indentation count at a form feed, so
  `\\f    x = 1` is indented by four): libcst drops it when generating code, and rejects the
  file ("no matching outer block for dedent") when the line opens an indented block;
- a bare `\\r` ending the last line: libcst drops it.

`prepare` gives the text libcst is given instead: form feeds (and what precedes them) removed
from the indentation of lines outside strings, a final bare `\\r` written `\\n`. Line numbers do
not change; columns on a line whose indentation lost characters move by that many, which
`shift` undoes for diagnostics, and `restore` puts the removed characters back into a fixed
text, line by line. Sources without a form feed or a final bare `\\r` are not touched (one
`in` test and one `endswith`).
"""

from __future__ import annotations

import difflib
import io
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from tpulint.datatypes.diagnostics import Diagnostic, Edit, Fix, Location

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_INDENT_WITH_FORM_FEED = re.compile(r"[ \t\f]*\f")


def physical_lines(text: str) -> list[str]:
    """Lines as Python's tokenizer splits them (only `\\n`, `\\r\\n` and `\\r` end a line; not
    the form feeds, U+2028 and other separators `str.splitlines` also splits at), with
    their endings."""
    return _LINE.findall(text)


@dataclass
class Shim:
    text: str  # what libcst is given
    prefixes: dict[int, str] = field(default_factory=dict)  # line -> removed indentation
    final_cr: bool = False  # the last line ended with a bare `\r`, given to libcst as `\n`


def prepare(source: str) -> Shim | None:
    """The text to give libcst, or None when `source` needs no change."""
    final_cr = source.endswith("\r")
    if "\f" not in source and not final_cr:
        return None
    lines = physical_lines(source)
    prefixes: dict[int, str] = {}
    if "\f" in source:
        inside = _lines_inside_strings(source)
        for index, line in enumerate(lines):
            number = index + 1
            if number in inside or "\f" not in line:
                continue
            match = _INDENT_WITH_FORM_FEED.match(line)
            if match:
                prefixes[number] = match.group(0)
                lines[index] = line[match.end() :]
    if final_cr and lines:
        lines[-1] = lines[-1][:-1] + "\n"
    if not prefixes and not final_cr:
        return None
    return Shim("".join(lines), prefixes, final_cr)


def _lines_inside_strings(source: str) -> set[int]:
    """Lines that start inside a string token (whose leading form feeds are string content)."""
    inside: set[int] = set()
    string_types = {tokenize.STRING}
    for name in ("FSTRING_MIDDLE", "FSTRING_END", "TSTRING_MIDDLE", "TSTRING_END"):
        if hasattr(tokenize, name):
            string_types.add(getattr(tokenize, name))
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in string_types and token.end[0] > token.start[0]:
                inside.update(range(token.start[0] + 1, token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        pass
    return inside


def _shift_location(location: Location, prefixes: dict[int, str]) -> Location:
    prefix = prefixes.get(location.line)
    if not prefix:
        return location
    return Location(location.line, location.column + len(prefix))


def shift(shim: Shim, diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics found in `shim.text`, with columns as in the original source."""
    if not shim.prefixes:
        return list(diagnostics)
    out = []
    for diagnostic in diagnostics:
        fix = diagnostic.fix
        if fix is not None and fix.edits:
            edits = tuple(
                Edit(
                    _shift_location(edit.start, shim.prefixes),
                    _shift_location(edit.end, shim.prefixes),
                    edit.content,
                )
                for edit in fix.edits
            )
            fix = Fix(fix.applicability, fix.message, edits)
        out.append(
            replace(
                diagnostic,
                start=_shift_location(diagnostic.start, shim.prefixes),
                end=_shift_location(diagnostic.end, shim.prefixes),
                fix=fix,
            )
        )
    return out


def restore(shim: Shim, new_text: str) -> str:
    """`new_text` (derived from `shim.text`) with the removed characters put back: the
    indentation prefixes on the lines that are still there (unchanged, or rewritten in place
    with the same indentation), and the final bare `\\r`."""
    if shim.prefixes:
        old_lines = physical_lines(shim.text)
        new_lines = physical_lines(new_text)
        matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
                for offset in range(i2 - i1):
                    prefix = shim.prefixes.get(i1 + offset + 1)
                    if not prefix:
                        continue
                    old, new = old_lines[i1 + offset], new_lines[j1 + offset]
                    if _indentation(old) == _indentation(new):
                        new_lines[j1 + offset] = prefix + new
        new_text = "".join(new_lines)
    if shim.final_cr and new_text.endswith("\n") and not new_text.endswith("\r\n"):
        new_text = new_text[:-1] + "\r"
    return new_text


def _indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]
