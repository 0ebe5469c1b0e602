"""The JSON report: a stable, versioned schema (tpulint/data/report.schema.json)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from tpulint import __version__
from tpulint.datatypes.diagnostics import Diagnostic
from tpulint.reporting.options import ReportOptions

SCHEMA_VERSION = 1


def diagnostic_json(d: Diagnostic, options: ReportOptions) -> dict[str, Any]:
    out = {
        "code": d.code,
        "name": d.name,
        "message": d.message,
        "severity": d.severity.value,
        "path": d.path,
        "start": d.start.to_json(),
        "end": d.end.to_json(),
        "fixable": d.fixable(options.unsafe_fixes),
        "fix": d.fix.to_json() if d.fix else None,
        "scope": d.scope,
    }
    if d.related:
        out["related"] = [r.to_json() for r in d.related]
    return out


def report_json(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "tpulint", "version": __version__},
        "summary": {
            "files_checked": options.files_checked,
            "findings": len(diagnostics),
            "fixable": sum(d.fixable(options.unsafe_fixes) for d in diagnostics),
            "by_code": dict(sorted(Counter(d.code for d in diagnostics).items())),
            "scope": options.scope,
            "outside_scope": options.outside_scope,
        },
        "diagnostics": [diagnostic_json(d, options) for d in diagnostics],
    }


def render_json(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> str:
    return json.dumps(report_json(diagnostics, options), indent=2, ensure_ascii=False) + "\n"
