"""Every rule's VALID and INVALID examples, collected as tests (Fixit's model)."""

from __future__ import annotations

import pytest

from tpulint.config.registry import all_rules
from tpulint.testing import iter_cases, run_case

CASES = list(iter_cases(list(all_rules())))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_example(case) -> None:
    run_case(case)


@pytest.mark.parametrize("rule", all_rules(), ids=[r.code for r in all_rules()])
def test_rule_has_examples(rule) -> None:
    if getattr(rule, "always_on", False):
        return  # TPL002/TPL003 are emitted for files, not by a visitor
    assert rule.VALID, f"{rule.code} has no VALID examples"
    assert rule.INVALID, f"{rule.code} has no INVALID examples"
    if rule.fix_applicability is not None and rule.fix_applicability.value != "display-only":
        assert any(i.expected_fix for i in rule.INVALID), (
            f"{rule.code} has a fix but no expected_fix"
        )
