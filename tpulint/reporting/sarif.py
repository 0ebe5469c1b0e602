"""SARIF 2.1.0, as GitHub code scanning accepts it (rules with help, results with regions and
fixes)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tpulint import __version__
from tpulint.datatypes.diagnostics import Diagnostic, Edit, RelatedLocation, Severity
from tpulint.reporting.options import ReportOptions

_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _rule_descriptor(rule: Any) -> dict[str, Any]:
    from tpulint.docs import render_rule

    sections = rule.doc_sections()
    what = sections.get("What it does", rule.summary)
    why = sections.get("Why is this bad on TPU?", "")
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": what},
        "help": {"text": f"{what}\n\n{why}".strip(), "markdown": render_rule(rule)},
        "defaultConfiguration": {
            "level": _LEVELS[rule.severity],
            # A preview rule is not in the default set (it runs only with --preview).
            "enabled": bool(rule.default_enabled and not rule.preview),
        },
        "properties": {
            "tags": [rule.family(), *(["preview"] if rule.preview else [])],
            "fix": rule.fix_availability(),
            "status": "preview" if rule.preview else "stable",
        },
    }


def _region(d: Diagnostic | RelatedLocation) -> dict[str, int]:
    return {
        "startLine": d.start.line,
        "startColumn": d.start.column,
        "endLine": d.end.line,
        "endColumn": d.end.column,
    }


def _result(d: Diagnostic, index: int) -> dict[str, Any]:
    location = {
        "physicalLocation": {
            "artifactLocation": {"uri": Path(d.path).as_posix(), "uriBaseId": "%SRCROOT%"},
            "region": _region(d),
        }
    }
    result: dict[str, Any] = {
        "ruleId": d.code,
        "ruleIndex": index,
        "level": _LEVELS[d.severity],
        "message": {"text": d.message},
        "locations": [location],
    }
    if d.scope is not None:
        result["properties"] = {"outsideTpuScope": d.scope}
    if d.related:
        # The other places of the same problem (SARIF 2.1.0 §3.27.22, relatedLocations).
        result["relatedLocations"] = [
            {
                "id": number,
                "physicalLocation": {
                    "artifactLocation": {
                        "uri": Path(r.path).as_posix(),
                        "uriBaseId": "%SRCROOT%",
                    },
                    "region": _region(r),
                },
                "message": {"text": r.message},
            }
            for number, r in enumerate(d.related, start=1)
        ]
    if d.fix is not None and d.fix.edits:
        changes = [_change(location["physicalLocation"]["artifactLocation"], d.fix.edits)]
        for other in d.fix.related:  # a fix that edits other files changes them too
            changes.append(
                _change({"uri": _shown(other.path), "uriBaseId": "%SRCROOT%"}, other.edits)
            )
        result["fixes"] = [
            {
                "description": {"text": f"{d.fix.message} ({d.fix.applicability.value})"},
                "artifactChanges": changes,
            }
        ]
    return result


def _shown(path: str) -> str:
    import os

    relative = os.path.relpath(path)
    return Path(path if relative.startswith("..") else relative).as_posix()


def _change(location: dict[str, Any], edits: Sequence[Edit]) -> dict[str, Any]:
    return {
        "artifactLocation": location,
        "replacements": [
            {
                "deletedRegion": {
                    "startLine": e.start.line,
                    "startColumn": e.start.column,
                    "endLine": e.end.line,
                    "endColumn": e.end.column,
                },
                "insertedContent": {"text": e.content},
            }
            for e in edits
        ],
    }


def report_sarif(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> dict[str, Any]:
    from tpulint.config.registry import all_rules

    rules = list(all_rules())
    index = {rule.code: i for i, rule in enumerate(rules)}
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "tpulint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": "https://pypi.org/project/tpulint/",
                        "rules": [_rule_descriptor(rule) for rule in rules],
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
                "results": [_result(d, index[d.code]) for d in diagnostics],
                # Findings the scope left out: in code that does not train on a TPU.
                "properties": {"scope": options.scope, "outsideScope": options.outside_scope},
            }
        ],
    }


def render_sarif(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> str:
    return json.dumps(report_sarif(diagnostics, options), indent=2, ensure_ascii=False) + "\n"
