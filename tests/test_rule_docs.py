"""Rule metadata and documentation: every rule documents itself, its doc examples are true,
and docs/rules/ is up to date with the classes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tpulint.config.registry import all_rules, family_of
from tpulint.config.settings import Config
from tpulint.docs import render_rule
from tpulint.engine.source import check_source
from tpulint.rule_api.rule import CODE_PATTERN, DOC_SECTIONS, NAME_PATTERN, code_block

DOCS = Path(__file__).resolve().parent.parent / "docs" / "rules"
RULES = all_rules()


def test_codes_and_names_are_unique() -> None:
    codes = [r.code for r in RULES]
    names = [r.name for r in RULES]
    assert len(codes) == len(set(codes))
    assert len(names) == len(set(names))


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_metadata(rule) -> None:
    assert CODE_PATTERN.match(rule.code), rule.code
    assert NAME_PATTERN.match(rule.name), rule.name
    assert family_of(rule.code) != "other"
    assert rule.summary and not rule.summary.endswith(".")
    if rule.code.startswith("TPU9"):
        assert not rule.default_enabled, "TPU9xx rules are opt-in"


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_doc_sections(rule) -> None:
    sections = rule.doc_sections()
    missing = [s for s in DOC_SECTIONS if s not in sections]
    assert not missing, f"{rule.code} docstring lacks sections {missing}"
    assert re.search(r"https?://", sections["References"]), "references need links"


@pytest.mark.parametrize(
    "rule", [r for r in RULES if not r.code.startswith("TPL")], ids=lambda r: r.code
)
def test_doc_examples_are_true(rule) -> None:
    """The "Example" block triggers the rule; the "Use instead" block does not."""
    sections = rule.doc_sections()
    example = code_block(sections["Example"])
    instead = code_block(sections["Use instead"])
    assert example and instead, f"{rule.code}: Example and Use instead need ```python blocks"
    # In preview mode: a stable rule's Example may show a shape still in preview (its page's
    # Status says which), and preview mode only adds findings.
    config = Config.from_mapping({"select": [rule.code], "preview": True})
    found = [d for d in check_source(example, "example.py", config) if d.code == rule.code]
    assert found, f"{rule.code}: its documented Example is not reported"
    clean = [d for d in check_source(instead, "example.py", config) if d.code == rule.code]
    assert not clean, f"{rule.code}: its documented 'Use instead' is reported: {clean}"


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_generated_docs_are_current(rule) -> None:
    page = DOCS / f"{rule.code}.md"
    assert page.is_file(), f"run `python -m tpulint.docs` to generate {page}"
    assert page.read_text(encoding="utf-8") == render_rule(rule), (
        f"{page} is stale: run `python -m tpulint.docs`"
    )
