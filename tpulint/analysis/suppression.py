"""Suppression comments: `# noqa`, `# noqa: TPU101`, `# tpulint: ignore[TPU101]`, the file-level
`# tpulint: noqa`, unused-suppression reporting (TPL001) and `--add-noqa`.

A suppression on any line a reported node spans silences it, so a multi-line call can carry
the comment on its closing line. Comments are found with the tokenizer (never inside strings),
and only in files that mention `noqa` or `tpulint:` at all.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tpulint.datatypes.diagnostics import Applicability, Diagnostic, Edit, Fix, Location, Severity
from tpulint.datatypes.roundtrip import physical_lines

_CODE = r"[A-Za-z]{1,5}[0-9]{1,4}"
NOQA_RE = re.compile(
    rf"#\s*noqa(?![\w-])(?::\s?(?P<codes>{_CODE}(?:[,\s]+{_CODE})*))?", re.IGNORECASE
)
IGNORE_RE = re.compile(r"#\s*tpulint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
FILE_NOQA_RE = re.compile(
    rf"^#\s*tpulint:\s*noqa(?::\s*(?P<codes>{_CODE}(?:[,\s]+{_CODE})*))?\s*$", re.IGNORECASE
)
OUR_CODE = re.compile(r"^(TPU|TPL)\d{3}$")


@dataclass
class Directive:
    """One suppression directive inside a comment."""

    line: int
    comment_col: int  # 0-based column of the comment's `#`
    comment: str  # the whole comment text
    start: int  # directive span within `comment`
    end: int
    kind: str  # "noqa" or "ignore"
    codes: tuple[str, ...] | None  # None: all codes
    code_end: int = 0  # column just after the code before the comment (whitespace excluded)
    used: set[str] = field(default_factory=set)
    used_bare: bool = False

    def matches(self, code: str, name: str) -> bool:
        if self.codes is None:
            return True
        return code in self.codes or name in self.codes


@dataclass
class Suppressions:
    by_line: dict[int, list[Directive]] = field(default_factory=dict)
    file_all: bool = False
    file_codes: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not (self.by_line or self.file_all or self.file_codes)

    def suppresses(self, diagnostic: Diagnostic) -> bool:
        if self.file_all or diagnostic.code in self.file_codes:
            return True
        lines = diagnostic.noqa_lines or (diagnostic.start.line,)
        hit = False
        for line in lines:
            for directive in self.by_line.get(line, ()):
                if directive.matches(diagnostic.code, diagnostic.name):
                    if directive.codes is None:
                        directive.used_bare = True
                    else:
                        directive.used.add(diagnostic.code)
                        directive.used.add(diagnostic.name)
                    hit = True
        return hit

    def unused(
        self, path: str, enabled: frozenset[str], known: frozenset[str], names: dict[str, str]
    ) -> list[Diagnostic]:
        """TPL001 diagnostics for directives naming tpulint codes that suppressed nothing.

        Codes of rules that are not enabled are left alone (they may be enabled elsewhere);
        codes that look like ours but do not exist are reported.
        """
        out = []
        for line in sorted(self.by_line):
            for directive in self.by_line[line]:
                if directive.codes is None:
                    continue
                stale = []
                for code in directive.codes:
                    canonical = names.get(code, code)
                    if canonical in directive.used:
                        continue
                    if canonical in known:
                        if canonical in enabled:
                            stale.append(code)
                    elif OUR_CODE.match(code):
                        stale.append(code)
                if not stale:
                    continue
                out.append(_unused_diagnostic(path, directive, stale))
        return out


def _unused_diagnostic(path: str, directive: Directive, stale: list[str]) -> Diagnostic:
    keep = [c for c in directive.codes or () if c not in stale]
    comment = directive.comment
    if keep:
        if directive.kind == "noqa":
            replacement = "# noqa: " + ", ".join(keep)
        else:
            replacement = "# tpulint: ignore[" + ", ".join(keep) + "]"
        new_comment = comment[: directive.start] + replacement + comment[directive.end :]
    else:
        new_comment = comment[: directive.start] + comment[directive.end :]
    new_comment = _tidy_comment(new_comment)
    col = directive.comment_col
    # Removing the whole comment also removes the spaces that separated it from the code.
    edit_start = col + 1 if new_comment else directive.code_end + 1
    start_col = col + directive.start + 1
    end_col = col + directive.end + 1
    listed = ", ".join(f"`{c}`" for c in stale)
    kind = "noqa" if directive.kind == "noqa" else "tpulint: ignore"
    message = f"Unused `{kind}` suppression for {listed}: nothing is reported here"
    fix = Fix(
        Applicability.SAFE,
        "Remove the unused suppression",
        (
            Edit(
                Location(directive.line, edit_start),
                Location(directive.line, col + len(comment) + 1),
                new_comment,
            ),
        ),
    )
    return Diagnostic(
        code="TPL001",
        name="unused-suppression",
        message=message,
        path=path,
        start=Location(directive.line, start_col),
        end=Location(directive.line, end_col),
        severity=Severity.INFO,
        fix=fix,
        noqa_lines=(directive.line,),
    )


def _tidy_comment(comment: str) -> str:
    """Normalise a comment after a directive was cut out of it; '' if nothing is left."""
    body = comment.strip()
    while body.startswith("#"):
        body = body[1:].strip()
    if not body:
        return ""
    return "# " + body


def _comments(source: str) -> Iterable[tuple[int, int, str]]:
    """(line, column, text) of every comment token; a regex fallback if tokenizing fails."""
    try:
        for tok in _tokens(source):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.start[1], tok.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        for number, line in enumerate(_lines(source), start=1):
            index = line.find("#")
            if index != -1:
                yield number, index, line[index:]


def parse_suppressions(
    source: str, comments: Iterable[tuple[int, int, str]] | None = None
) -> Suppressions:
    """The suppression comments of a source. `comments` are its (1-based line, 0-based
    column, text) comments when it is not Python (the YAML reader finds a config's); by
    default the Python tokenizer finds them."""
    result = Suppressions()
    lowered = source.lower()
    if "noqa" not in lowered and "tpulint:" not in lowered:
        return result
    lines = _lines(source)
    file_codes: set[str] = set()
    for line, col, text in _comments(source) if comments is None else comments:
        own_line = col == 0 or not lines[line - 1][:col].strip()
        file_match = FILE_NOQA_RE.match(text) if own_line else None
        if file_match:
            codes = file_match.group("codes")
            if codes:
                file_codes.update(_split_codes(codes))
            else:
                result.file_all = True
            continue
        for regex, kind in ((NOQA_RE, "noqa"), (IGNORE_RE, "ignore")):
            for match in regex.finditer(text):
                raw = match.group("codes")
                codes = tuple(_split_codes(raw)) if raw and raw.strip() else None
                code_end = len(lines[line - 1][:col].rstrip())
                result.by_line.setdefault(line, []).append(
                    Directive(line, col, text, match.start(), match.end(), kind, codes, code_end)
                )
    result.file_codes = frozenset(file_codes)
    return result


def _tokens(source: str) -> Iterable[tokenize.TokenInfo]:
    """Python's tokens of `source`. A reader splitting at `\n` only would hand the tokenizer
    a file of bare `\r` line endings as one line: line endings are made `\n` first, which
    moves no token to another line or column."""
    if "\r" in source:
        source = re.sub(r"\r\n?", "\n", source)
    return tokenize.generate_tokens(io.StringIO(source).readline)


def _lines(source: str) -> list[str]:
    """Lines as Python's tokenizer numbers them, without their endings (`str.splitlines`
    also splits at form feeds, U+2028 and other separators, which would shift line numbers
    and put comments inside strings)."""
    return [line.rstrip("\r\n") for line in physical_lines(source)]


def _split_codes(raw: str) -> list[str]:
    out = []
    for part in re.split(r"[,\s]+", raw.strip()):
        if part:
            out.append(part.upper() if re.match(_CODE + "$", part) else part.lower())
    return out


# --- --add-noqa --------------------------------------------------------------------------


class NoqaError(ValueError):
    """Adding the comments would change the file's code (nothing is written)."""


def add_noqa(
    source: str,
    diagnostics: Sequence[Diagnostic],
    *,
    comments: Iterable[tuple[int, int, str]] | None = None,
    blocked: Iterable[int] | None = None,
) -> tuple[str, int]:
    """Add `# noqa: CODE` comments for `diagnostics`; returns (new source, comments added).

    Each diagnostic gets its comment on the first line it spans whose end is not inside a
    string and not a backslash continuation. Existing `# noqa: ...` lists are extended.
    Lines are Python's (see `_lines`). For Python, the result is checked to tokenize to the
    same code as `source` (only comments differ): otherwise NoqaError. For a source that is
    not Python, pass its `comments` (as for `parse_suppressions`) and the lines that cannot
    take a trailing comment (`blocked`)."""
    if not diagnostics:
        return source, 0
    new, added = _add_noqa(source, diagnostics, comments, blocked)
    if added and comments is None:
        before = _code_tokens(source)
        if before is None:
            raise NoqaError("the file does not tokenize, so the result cannot be verified")
        if _code_tokens(new) != before:
            raise NoqaError("adding the comments would change the code")
    return new, added


def _code_tokens(source: str) -> list[tuple[int, str]] | None:
    """The file's tokens other than comments and blank-line markers (None: untokenizable)."""
    try:
        return [
            (token.type, token.string)
            for token in _tokens(source)
            if token.type not in (tokenize.COMMENT, tokenize.NL)
        ]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None


def _add_noqa(
    source: str,
    diagnostics: Sequence[Diagnostic],
    comments: Iterable[tuple[int, int, str]] | None,
    blocked: Iterable[int] | None,
) -> tuple[str, int]:
    lines = physical_lines(source)
    blocked = set(_lines_ending_in_strings(source) if blocked is None else blocked)
    codes_by_line: dict[int, set[str]] = {}
    for diagnostic in diagnostics:
        candidates = diagnostic.noqa_lines or (diagnostic.start.line,)
        for line in sorted(candidates):
            if line in blocked or line > len(lines):
                continue
            text = lines[line - 1].rstrip("\r\n")
            if text.rstrip().endswith("\\"):
                continue
            codes_by_line.setdefault(line, set()).add(diagnostic.code)
            break
    by_line = {
        line: (col, text)
        for line, col, text in (_comments(source) if comments is None else comments)
    }
    added = 0
    for line, codes in codes_by_line.items():
        raw = lines[line - 1]
        ending = raw[len(raw.rstrip("\r\n")) :]
        text = raw.rstrip("\r\n")
        existing = by_line.get(line)
        merged = False
        if existing is not None:
            col, comment = existing
            match = NOQA_RE.search(comment)
            if match and match.group("codes"):
                old = _split_codes(match.group("codes"))
                new_codes = sorted(set(old) | codes)
                comment = (
                    comment[: match.start()]
                    + "# noqa: "
                    + ", ".join(new_codes)
                    + comment[match.end() :]
                )
                text = text[:col] + comment
                merged = True
            elif match:
                continue  # a bare noqa already silences everything here
        if not merged:
            text = text.rstrip() + "  # noqa: " + ", ".join(sorted(codes))
        lines[line - 1] = text + ending
        added += len(codes)
    return "".join(lines), added


def _lines_ending_in_strings(source: str) -> set[int]:
    blocked: set[int] = set()
    fstring_start = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    open_fstrings: list[int] = []
    try:
        for tok in _tokens(source):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                blocked.update(range(tok.start[0], tok.end[0]))
            elif fstring_start is not None and tok.type == fstring_start:
                open_fstrings.append(tok.start[0])
            elif fstring_end is not None and tok.type == fstring_end and open_fstrings:
                first = open_fstrings.pop()
                blocked.update(range(first, tok.end[0]))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return blocked
