"""Running a rule's VALID/INVALID examples (used by the test suite and `tpulint rules --check`)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tpulint.config.settings import Config
from tpulint.datatypes.diagnostics import Applicability
from tpulint.engine.source import check_source, fix_source
from tpulint.rule_api.rule import Invalid, Rule, Valid


@dataclass(frozen=True)
class ExampleCase:
    rule: type[Rule]
    kind: str  # "valid" or "invalid"
    index: int
    example: Valid | Invalid

    @property
    def id(self) -> str:
        return f"{self.rule.code}-{self.kind}-{self.index}"


def iter_cases(rules: list[type[Rule]]) -> Iterator[ExampleCase]:
    for rule in rules:
        for index, example in enumerate(rule.VALID):
            yield ExampleCase(rule, "valid", index, example)
        for index, example in enumerate(rule.INVALID):
            yield ExampleCase(rule, "invalid", index, example)


def example_config(rule: type[Rule], overrides: dict[str, Any]) -> Config:
    data: dict[str, Any] = {"select": list(rule.example_selection or (rule.code,))}
    if rule.preview:
        data["preview"] = True  # a preview rule runs only in preview mode
    data.update(overrides)
    return Config.from_mapping(data)


def run_case(case: ExampleCase) -> None:
    """Raise AssertionError with a readable message if the example does not hold."""
    rule, example = case.rule, case.example
    code = textwrap.dedent(example.code)
    config = example_config(rule, example.config)
    found = [d for d in check_source(code, example.path, config) if d.code == rule.code]
    if isinstance(example, Valid):
        assert not found, (
            f"{case.id}: expected no {rule.code}, got:\n"
            + "\n".join(f"  {d.start.line}:{d.start.column} {d.message}" for d in found)
            + f"\n--- code ---\n{code}"
        )
        return
    assert len(found) == example.count, (
        f"{case.id}: expected {example.count} x {rule.code}, got {len(found)}:\n"
        + "\n".join(f"  {d.start.line}:{d.start.column} {d.message}" for d in found)
        + f"\n--- code ---\n{code}"
    )
    first = found[0]
    if example.line is not None:
        assert first.start.line == example.line, (
            f"{case.id}: expected line {example.line}, got {first.start.line}"
        )
    if example.message is not None:
        assert example.message in first.message, (
            f"{case.id}: expected {example.message!r} in message {first.message!r}"
        )
    if example.applicability is not None:
        assert first.fix is not None and first.fix.applicability is example.applicability, (
            f"{case.id}: expected a {example.applicability.value} fix, got "
            f"{first.fix.applicability.value if first.fix else 'none'}"
        )
    if example.expected_fix is not None:
        result = fix_source(code, example.path, config, unsafe=True)
        assert result.error is None, f"{case.id}: {result.error}"
        assert result.source == textwrap.dedent(example.expected_fix), (
            f"{case.id}: fix differs\n--- got ---\n{result.source}\n--- expected ---\n"
            f"{textwrap.dedent(example.expected_fix)}"
        )
        again = fix_source(result.source, example.path, config, unsafe=True)
        assert again.source == result.source, f"{case.id}: a second fix run changed the code"
    if example.expected_suggestion is not None:
        suggestion = apply_suggestions(code, found)
        assert suggestion == textwrap.dedent(example.expected_suggestion), (
            f"{case.id}: suggestion differs\n--- got ---\n{suggestion}"
        )


def apply_suggestions(code: str, diagnostics: list) -> str:
    """The code with the display-only suggestions' edits applied."""
    from tpulint.engine.source import apply_text_edits

    chosen = [
        d
        for d in diagnostics
        if d.fix is not None and d.fix.applicability is Applicability.DISPLAY_ONLY
    ]
    return apply_text_edits(code, chosen)[0]
