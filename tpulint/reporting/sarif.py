"""SARIF 2.1.0, as GitHub code scanning accepts it (rules with help, results with regions and
fixes)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tpulint import __version__
from tpulint.datatypes.diagnostics import Diagnostic, RelatedLocation, Severity
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
        result["fixes"] = [
            {
                "description": {"text": f"{d.fix.message} ({d.fix.applicability.value})"},
                "artifactChanges": [
                    {
                        "artifactLocation": location["physicalLocation"]["artifactLocation"],
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
                            for e in d.fix.edits
                        ],
                    }
                ],
            }
        ]
    return result


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
            }
        ],
    }


def render_sarif(diagnostics: Sequence[Diagnostic], options: ReportOptions) -> str:
    return json.dumps(report_sarif(diagnostics, options), indent=2, ensure_ascii=False) + "\n"
