"""Shell launchers (`scripts/train_tpu.sh`): the environment they set for the training run.

A TPU launcher script exports the runtime's settings before it runs `python train.py`:
`export XRT_TPU_CONFIG="tpu_worker;0;$TPU_IP_ADDRESS:8470"` configures torch_xla's retired
XRT runtime as much as `os.environ["XRT_TPU_CONFIG"] = ...` in Python. This module reads a
script's lines without running it: its comments (a `#` that starts a word outside quotes,
where `# noqa: TPU008` suppressions live), the variables it assigns (`NAME=value`, `export
NAME=value`, `env NAME=value cmd`, `NAME=value cmd`), and the modules it runs with
`python -m`. Quoting is followed within a line; here-documents and multi-line strings are
read as ordinary lines (a launcher rarely sets its environment inside one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SHELL_SUFFIXES = (".sh", ".bash")
# `NAME=` where a word starts: after an optional `export` / `declare -x` / `env` / `local`.
_ASSIGNMENT = re.compile(
    r"(?:(?<=^)|(?<=[\s;&|(`]))"
    r"(?:(?:export|declare\s+-x|readonly|local|env)\s+)?"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>\"[^\"]*\"|'[^']*'|[^\s;&|]*)"
)
# `python -m torch_xla.distributed.xla_dist ...` (any interpreter spelling).
_MODULE_RUN = re.compile(r"(?:(?<=^)|(?<=[\s;&|(`]))-m\s+(?P<module>[A-Za-z_][\w.]*)")


def is_shell_path(path: str) -> bool:
    return path.lower().endswith(SHELL_SUFFIXES)


@dataclass(frozen=True)
class ShellWord:
    """A span of one line of a script (1-based line, 1-based columns, end exclusive)."""

    line: int
    column: int
    end_column: int
    name: str  # the variable assigned, or the module run
    value: str  # the value assigned (quotes removed), or ""


def shell_comments(text: str) -> list[tuple[int, int, str]]:
    """(1-based line, 0-based column, text) of each comment: a `#` outside quotes that starts
    a word (the first character, or after a blank, `;`, `&`, `|` or `(`)."""
    out: list[tuple[int, int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        column = _comment_column(line)
        if column is not None:
            out.append((number, column, line[column:]))
    return out


def _comment_column(line: str) -> int | None:
    quote = ""
    escaped = False
    for index, char in enumerate(line):
        if escaped:
            escaped = False
            continue
        if char == "\\" and quote != "'":
            escaped = True
            continue
        if quote:
            if char == quote:
                quote = ""
            continue
        if char in "\"'":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t;&|("):
            return index
    return None


def _code_lines(text: str) -> list[tuple[int, str]]:
    """(1-based line, the line without its comment)."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        column = _comment_column(line)
        out.append((number, line if column is None else line[:column]))
    return out


def shell_assignments(text: str) -> list[ShellWord]:
    """The variables the script assigns, with the span of `NAME=value`."""
    out = []
    for number, code in _code_lines(text):
        for match in _ASSIGNMENT.finditer(code):
            value = match.group("value")
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            out.append(
                ShellWord(
                    number,
                    match.start("name") + 1,
                    match.end("value") + 1,
                    match.group("name"),
                    value,
                )
            )
    return out


def shell_module_runs(text: str) -> list[ShellWord]:
    """The modules the script runs with `-m module` (`python -m pkg.tool`)."""
    out = []
    for number, code in _code_lines(text):
        for match in _MODULE_RUN.finditer(code):
            out.append(
                ShellWord(
                    number,
                    match.start("module") + 1,
                    match.end("module") + 1,
                    match.group("module"),
                    "",
                )
            )
    return out
