"""The rule registry and rule selection (`--select`, `--ignore`, `--extend-select`).

Selection follows Ruff: selectors are full codes, code prefixes (`TPU1`, `TPU10`), rule names
(`item-in-hot-path`) or `ALL`. Within one layer (the config file, then the command line),
a more specific selector wins over a less specific one, and `ignore` wins a tie. A layer
with `select` replaces what the previous layers enabled.

Opt-in rules (TPU9xx) are only enabled by a selector that reaches into their family
(`TPU9`, `TPU90`, `TPU901`), by their name, or by `ALL`.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from tpulint.rule import Rule

FAMILIES = {
    "TPU0": "trainer-config",
    "TPU1": "host-sync",
    "TPU2": "dynamic-shapes",
    "TPU3": "data-pipeline",
    "TPU4": "precision",
    "TPU5": "xla-api",
    "TPU9": "opt-in",
    "TPL": "tool",
}
FAMILY_TITLES = {
    "trainer-config": "Lightning and Trainer configuration (TPU0xx)",
    "host-sync": "Host-device syncs in hot code (TPU1xx)",
    "dynamic-shapes": "Dynamic shapes and recompilation (TPU2xx)",
    "data-pipeline": "Data pipeline and batch geometry (TPU3xx)",
    "precision": "Precision and dtypes (TPU4xx)",
    "xla-api": "torch_xla API usage (TPU5xx)",
    "opt-in": "Opt-in checks (TPU9xx)",
    "tool": "tpulint itself (TPLxxx)",
}


def family_of(code: str) -> str:
    for prefix, family in FAMILIES.items():
        if code.startswith(prefix):
            return family
    return "other"


class SelectionError(ValueError):
    """An unknown rule selector."""


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule: the TPU catalogue (tpulint.rules) and tpulint's own TPL rules."""
    catalogue = importlib.import_module("tpulint.rules").ALL_RULES
    from tpulint.meta_rules import META_RULES

    rules = sorted([*catalogue, *META_RULES], key=lambda r: r.code)
    codes = [r.code for r in rules]
    duplicates = {c for c in codes if codes.count(c) > 1}
    if duplicates:
        raise RuntimeError(f"duplicate rule codes: {sorted(duplicates)}")
    return tuple(rules)


@lru_cache(maxsize=1)
def rules_by_code() -> dict[str, type[Rule]]:
    return {r.code: r for r in all_rules()}


@lru_cache(maxsize=1)
def rules_by_name() -> dict[str, type[Rule]]:
    return {r.name: r for r in all_rules()}


def find_rule(code_or_name: str) -> type[Rule] | None:
    key = code_or_name.strip()
    return rules_by_code().get(key.upper()) or rules_by_name().get(key.lower())


@dataclass(frozen=True)
class SelectionLayer:
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


def _matches(selector: str, rule: type[Rule]) -> tuple[bool, int]:
    """(matches, specificity) of a selector for a rule."""
    if selector == "ALL":
        return True, 0
    if selector == rule.name:
        return True, 100
    if rule.code.startswith(selector):
        if rule.default_enabled:
            return True, len(selector)
        # Opt-in rules need a selector that reaches into their hundreds family.
        family_prefix = rule.code[:4]
        return selector.startswith(family_prefix), len(selector)
    return False, 0


def validate_selector(selector: str) -> str:
    """Normalise a selector and reject ones that match no rule."""
    value = selector.strip()
    if value.upper() == "ALL":
        return "ALL"
    if value.lower() in rules_by_name():
        return value.lower()
    upper = value.upper()
    if upper and any(r.code.startswith(upper) for r in all_rules()):
        return upper
    candidates = [r.code for r in all_rules()] + [r.name for r in all_rules()]
    close = difflib.get_close_matches(value, candidates, n=1)
    hint = f" (did you mean `{close[0]}`?)" if close else ""
    raise SelectionError(f"unknown rule selector `{selector}`{hint}")


def resolve_selection(layers: Sequence[SelectionLayer]) -> frozenset[str]:
    """The codes of the enabled rules after applying `layers` in order."""
    rules = [r for r in all_rules() if not getattr(r, "always_on", False)]
    enabled = {r.code for r in rules if r.default_enabled}
    for layer in layers:
        if layer.select is not None:
            enabled = set()
            base = [(s, True) for s in layer.select]
        else:
            base = []
        selectors = (
            base + [(s, True) for s in layer.extend_select] + [(s, False) for s in layer.ignore]
        )
        for rule in rules:
            best: tuple[int, int] | None = None  # (specificity, 0 for ignore / 1 select)
            decision = None
            for selector, is_select in selectors:
                matched, specificity = _matches(selector, rule)
                if not matched:
                    continue
                # Higher specificity wins; at equal specificity, ignore (0) beats select (1).
                key = (specificity, 0 if not is_select else 1)
                if best is None or key[0] > best[0] or (key[0] == best[0] and key[1] < best[1]):
                    best = key
                    decision = is_select
            if decision is True:
                enabled.add(rule.code)
            elif decision is False:
                enabled.discard(rule.code)
    enabled |= {r.code for r in all_rules() if getattr(r, "always_on", False)}
    return frozenset(enabled)


def codes_matching(selectors: Iterable[str]) -> frozenset[str]:
    """Codes matched by any of `selectors` (used for per-file ignores and suppressions)."""
    out = set()
    for rule in all_rules():
        for selector in selectors:
            if selector == "ALL" or selector == rule.name or rule.code.startswith(selector):
                out.add(rule.code)
                break
    return frozenset(out)
