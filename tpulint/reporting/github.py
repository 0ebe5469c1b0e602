"""GitHub Actions workflow commands: one `::error`/`::warning`/`::notice` annotation per finding."""

from __future__ import annotations

from collections.abc import Sequence

from tpulint.datatypes.diagnostics import Diagnostic, Severity
from tpulint.reporting.options import ReportOptions
from tpulint.reporting.text import scope_note

_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def render_github(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> str:
    lines = []
    for d in diagnostics:
        props = ",".join(
            [
                f"title={_escape_property(f'tpulint ({d.code})')}",
                f"file={_escape_property(d.path)}",
                f"line={d.start.line}",
                f"col={d.start.column}",
                f"endLine={d.end.line}",
                f"endColumn={d.end.column}",
            ]
        )
        text = f"{d.code} {d.message}{scope_note(d)}"
        lines.append(f"::{_LEVELS[d.severity]} {props}::{_escape_data(text)}")
    return "".join(line + "\n" for line in lines)
