"""The `full` format: each finding with a source excerpt, a caret span, the fix title, and the
fix (or display-only suggestion) as a diff."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import click

from tpulint.datatypes.diagnostics import Applicability, Diagnostic, FileEdits, Fix
from tpulint.reporting.options import ReportOptions
from tpulint.reporting.text import render_line

CONTEXT = 2
_FIX_TITLES = {
    Applicability.SAFE: "Safe fix",
    Applicability.UNSAFE: "Unsafe fix (applied with --unsafe-fixes)",
    Applicability.DISPLAY_ONLY: "Suggested fix (display-only, never applied automatically)",
}


def _apply_edits(text: str, d: Diagnostic) -> str:
    from tpulint.engine.source import apply_text_edits

    return apply_text_edits(text, [d])[0]


def _shown(path: str, finding: Diagnostic) -> str:
    """Another file's path as the finding's own path is shown: relative to the same folder
    when the finding's path is relative."""
    import os

    own = os.path.abspath(finding.path)
    if not os.path.isabs(finding.path) and own.endswith(finding.path) and os.path.exists(own):
        base = own[: len(own) - len(finding.path)]
        if path.startswith(base):
            return path[len(base) :]
    return path


def _related_diff(other: FileEdits, d: Diagnostic, options: ReportOptions) -> list[str]:
    """The diff a fix makes in another file (it edits several at once)."""
    shown = _shown(other.path, d)
    text = options.source_lookup(shown) if options.source_lookup else None
    if text is None:
        try:
            with open(other.path, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError):
            return [f"    (and {len(other.edits)} edits in {shown})"]
    holder = Diagnostic(
        "TPL000", "", "", shown, other.edits[0].start, other.edits[0].start,
        fix=Fix(Applicability.UNSAFE, "", other.edits),
    )  # fmt: skip
    return [f"    in {shown}:", *_fix_diff(text, holder, options.color)]


def _excerpt(lines: list[str], d: Diagnostic, color: bool) -> list[str]:
    first = max(1, d.start.line - CONTEXT)
    last = min(len(lines), d.end.line + CONTEXT)
    width = len(str(last))
    gutter = " " * width + " |"
    out = [gutter]
    for number in range(first, last + 1):
        text = lines[number - 1].rstrip("\r\n")
        out.append(f"{number:>{width}} | {text}")
        if d.start.line <= number <= d.end.line:
            start = d.start.column - 1 if number == d.start.line else len(text) - len(text.lstrip())
            end = d.end.column - 1 if number == d.end.line else len(text)
            end = max(end, start + 1)
            marks = "^" * (end - start)
            label = f" {d.code}" if number == d.end.line else ""
            caret = " " * start + marks + label
            if color:
                caret = click.style(caret, fg="red", bold=True)
            out.append(f"{gutter} {caret}")
    out.append(gutter)
    return out


def _fix_diff(text: str, d: Diagnostic, color: bool) -> list[str]:
    assert d.fix is not None
    fixed = _apply_edits(text, d)
    if fixed == text:
        return []
    diff = difflib.unified_diff(
        text.splitlines(keepends=True), fixed.splitlines(keepends=True), lineterm="", n=1
    )
    out = []
    for line in list(diff)[2:]:  # drop the ---/+++ header
        line = line.rstrip("\r\n")
        if color and line.startswith("+"):
            line = click.style(line, fg="green")
        elif color and line.startswith("-"):
            line = click.style(line, fg="red")
        elif color and line.startswith("@@"):
            line = click.style(line, fg="cyan")
        out.append("    " + line)
    return out


def render_full(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> str:
    blocks = []
    texts: dict[str, str | None] = {}
    for d in diagnostics:
        block = [render_line(d, options)]
        if d.path not in texts:
            texts[d.path] = options.source_lookup(d.path) if options.source_lookup else None
        text = texts[d.path]
        if text is not None:
            lines = text.splitlines(keepends=True) or [""]
            if d.end.line <= len(lines):
                block += _excerpt(lines, d, options.color)
        if d.fix is not None:
            block.append(f"  = help: {d.fix.message}")
            if text is not None and d.fix.edits:
                diff = _fix_diff(text, d, options.color)
                for other in d.fix.related:
                    diff += _related_diff(other, d, options)
                if diff:
                    block.append("")
                    block.append(f"  {_FIX_TITLES[d.fix.applicability]}:")
                    block += diff
        blocks.append("\n".join(block))
    return "".join(b + "\n\n" for b in blocks)
