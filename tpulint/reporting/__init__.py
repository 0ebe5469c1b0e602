"""Rendering diagnostics: text, full, json, sarif, github (and --statistics)."""

from __future__ import annotations

from collections.abc import Sequence

from tpulint.datatypes.diagnostics import Diagnostic
from tpulint.reporting.options import ReportOptions

__all__ = ["ReportOptions", "render"]


def render(fmt: str, diagnostics: Sequence[Diagnostic], options: ReportOptions) -> str:
    if fmt == "text":
        from tpulint.reporting.text import render_text

        return render_text(diagnostics, options)
    if fmt == "full":
        from tpulint.reporting.full import render_full

        return render_full(diagnostics, options)
    if fmt == "json":
        from tpulint.reporting.json_report import render_json

        return render_json(diagnostics, options)
    if fmt == "sarif":
        from tpulint.reporting.sarif import render_sarif

        return render_sarif(diagnostics, options)
    if fmt == "github":
        from tpulint.reporting.github import render_github

        return render_github(diagnostics, options)
    raise ValueError(f"unknown output format {fmt!r}")
