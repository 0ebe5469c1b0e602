"""The rule manifest, `tpulint/data/rules.json`: the catalogue's metadata generated from the
rule classes, which the registry reads instead of importing them.

    python -m tpulint.manifest      # regenerate after adding or changing a rule

tests/test_manifest.py fails when the file does not match the classes.
"""

from __future__ import annotations

import json
from pathlib import Path

from tpulint.config.registry import MANIFEST, RuleInfo
from tpulint.rule_api.meta_rules import META_RULES
from tpulint.rule_api.rule import Rule


def info_of(rule: type[Rule]) -> RuleInfo:
    return RuleInfo(
        code=rule.code,
        name=rule.name,
        summary=rule.summary,
        severity=rule.severity,
        fix_applicability=rule.fix_applicability,
        fix_sometimes=rule.fix_sometimes,
        default_enabled=rule.default_enabled,
        always_on=bool(getattr(rule, "always_on", False)),
        preview=bool(rule.preview),
        requires=tuple(rule.requires),
        checks_yaml=rule.check_yaml is not Rule.check_yaml,
        module=rule.__module__,
        class_name=rule.__qualname__,
    )


def rule_classes() -> list[type[Rule]]:
    """The rule classes themselves: the TPU catalogue and tpulint's own TPL rules."""
    from tpulint.rules import ALL_RULES

    return sorted([*ALL_RULES, *META_RULES], key=lambda r: r.code)


def render() -> str:
    """The manifest's text for the current rule classes."""
    rules = rule_classes()
    codes = [r.code for r in rules]
    duplicates = sorted({c for c in codes if codes.count(c) > 1})
    if duplicates:
        raise RuntimeError(f"duplicate rule codes: {duplicates}")
    payload = {
        "generated_by": "python -m tpulint.manifest",
        "rules": [info_of(rule).to_json() for rule in rules],
    }
    return json.dumps(payload, indent=1, ensure_ascii=False) + "\n"


def write(path: Path = MANIFEST) -> Path:
    path.write_text(render(), encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write())
