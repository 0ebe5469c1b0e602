"""The rule registry and rule selection (`--select`, `--ignore`, `--extend-select`).

Selection follows Ruff: selectors are full codes, code prefixes (`TPU1`, `TPU10`), rule names
(`item-in-hot-path`) or `ALL`. Within one layer (the config file, then the command line),
a more specific selector wins over a less specific one, and `ignore` wins a tie. A layer
with `select` replaces what the previous layers enabled.

Opt-in rules (TPU9xx) are only enabled by a selector that reaches into their family
(`TPU9`, `TPU90`, `TPU901`), by their name, or by `ALL`.

Preview rules follow Ruff's preview mode (docs.astral.sh/ruff/preview): a rule whose precision
on code read after it was frozen is below the bar is `preview`, and is enabled only when
preview is on (`--preview`, `preview = true`). Then it is selected like a stable rule (the
default set, prefixes, `ALL`), or only by its exact code or name with
`explicit-preview-rules = true`. Without preview, selecting it has no effect, and the CLI
says so (`selection_warnings`).

The registry works from the manifest (`tpulint/data/rules.json`: each rule's code, name,
summary, severity, fix safety, defaults, prefilter and where its class lives), so selection
never imports a rule. The classes are loaded by name, only when something needs them (the
engine, when a file must be analysed; the docs; `explain`).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tpulint.datatypes.diagnostics import Applicability, Severity

if TYPE_CHECKING:
    from tpulint.rule_api.rule import Rule

# The catalogue's metadata, generated from the rule classes by `python -m tpulint.manifest`
# (tests/test_manifest.py keeps it in sync), so that selecting rules, resolving a
# configuration, reading the cache and listing the rules import no rule module and no libcst.
MANIFEST = Path(__file__).resolve().parent.parent / "data" / "rules.json"

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


def fix_availability(applicability: Applicability | None, sometimes: bool) -> str:
    """`safe`, `unsafe (sometimes)`, `display-only`, `none`: how a rule's fixes are listed."""
    if applicability is None:
        return "none"
    return f"{applicability.value} (sometimes)" if sometimes else applicability.value


class SelectionError(ValueError):
    """An unknown rule selector."""


@dataclass(frozen=True)
class RuleInfo:
    """What the catalogue says about a rule without importing it (the manifest's entry)."""

    code: str
    name: str
    summary: str
    severity: Severity
    fix_applicability: Applicability | None
    fix_sometimes: bool
    default_enabled: bool
    always_on: bool
    preview: bool  # status: preview (enabled only with preview on) or stable
    requires: tuple[str, ...]  # the prefilter: substrings one of which the file must contain
    checks_yaml: bool  # whether the rule also checks LightningCLI configs
    module: str
    class_name: str

    def family(self) -> str:
        return family_of(self.code)

    def fix_availability(self) -> str:
        return fix_availability(self.fix_applicability, self.fix_sometimes)

    @property
    def status(self) -> str:
        return "preview" if self.preview else "stable"

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "summary": self.summary,
            "severity": self.severity.value,
            "fix": self.fix_applicability.value if self.fix_applicability else None,
            "fix_sometimes": self.fix_sometimes,
            "default_enabled": self.default_enabled,
            "always_on": self.always_on,
            "status": self.status,
            "requires": list(self.requires),
            "checks_yaml": self.checks_yaml,
            "module": self.module,
            "class": self.class_name,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RuleInfo:
        return cls(
            code=data["code"],
            name=data["name"],
            summary=data["summary"],
            severity=Severity(data["severity"]),
            fix_applicability=Applicability(data["fix"]) if data["fix"] else None,
            fix_sometimes=data["fix_sometimes"],
            default_enabled=data["default_enabled"],
            always_on=data["always_on"],
            preview=data["status"] == "preview",
            requires=tuple(data["requires"]),
            checks_yaml=data["checks_yaml"],
            module=data["module"],
            class_name=data["class"],
        )


@cache
def catalogue() -> tuple[RuleInfo, ...]:
    """Every rule's metadata, by code, from the manifest."""
    data = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return tuple(sorted((RuleInfo.from_json(r) for r in data["rules"]), key=lambda r: r.code))


@cache
def infos_by_code() -> dict[str, RuleInfo]:
    return {r.code: r for r in catalogue()}


@cache
def infos_by_name() -> dict[str, RuleInfo]:
    return {r.name: r for r in catalogue()}


def find_info(code_or_name: str) -> RuleInfo | None:
    key = code_or_name.strip()
    return infos_by_code().get(key.upper()) or infos_by_name().get(key.lower())


@cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule class: the manifest's modules are imported (the TPU catalogue,
    tpulint.rules, and tpulint's own TPL rules). Loaded by name, like plugins: only the
    engine, the docs and `explain` need the classes."""
    rules = []
    modules: dict[str, Any] = {}
    for info in catalogue():
        module = modules.get(info.module) or importlib.import_module(info.module)
        modules[info.module] = module
        rule = getattr(module, info.class_name, None)
        if rule is None or getattr(rule, "code", None) != info.code:
            raise RuntimeError(
                f"the rule manifest is out of date ({info.code} is not "
                f"{info.module}.{info.class_name}): run `python -m tpulint.manifest`"
            )
        rules.append(rule)
    return tuple(rules)


@cache
def rules_by_code() -> dict[str, type[Rule]]:
    return {r.code: r for r in all_rules()}


@cache
def rules_by_name() -> dict[str, type[Rule]]:
    return {r.name: r for r in all_rules()}


def find_rule(code_or_name: str) -> type[Rule] | None:
    info = find_info(code_or_name)
    return rules_by_code().get(info.code) if info is not None else None


def clear_caches() -> None:
    """Forget the loaded catalogue (tests that add rules call it)."""
    for function in (
        catalogue,
        infos_by_code,
        infos_by_name,
        all_rules,
        rules_by_code,
        rules_by_name,
    ):
        function.cache_clear()


@dataclass(frozen=True)
class SelectionLayer:
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


def _matches(selector: str, rule: RuleInfo, explicit_preview: bool = False) -> tuple[bool, int]:
    """(matches, specificity) of a selector for a rule."""
    exact = selector == rule.name or selector == rule.code
    if rule.preview and explicit_preview and not exact:
        return False, 0  # `explicit-preview-rules`: a preview rule only by its code or name
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
    if value.lower() in infos_by_name():
        return value.lower()
    upper = value.upper()
    if upper and any(r.code.startswith(upper) for r in catalogue()):
        return upper
    candidates = [r.code for r in catalogue()] + [r.name for r in catalogue()]
    import difflib

    close = difflib.get_close_matches(value, candidates, n=1)
    hint = f" (did you mean `{close[0]}`?)" if close else ""
    raise SelectionError(f"unknown rule selector `{selector}`{hint}")


def resolve_selection(
    layers: Sequence[SelectionLayer], preview: bool = False, explicit_preview: bool = False
) -> frozenset[str]:
    """The codes of the enabled rules after applying `layers` in order. Preview rules take
    part only when `preview` is on (Ruff's preview mode)."""
    rules = [r for r in catalogue() if not r.always_on and (preview or not r.preview)]
    enabled = {r.code for r in rules if r.default_enabled and not (r.preview and explicit_preview)}
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
                matched, specificity = _matches(
                    selector, rule, explicit_preview=explicit_preview and is_select
                )
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
    enabled |= {r.code for r in catalogue() if r.always_on}
    return frozenset(enabled)


def selection_warnings(layers: Sequence[SelectionLayer], preview: bool) -> list[str]:
    """Ruff's warning for a selection that enables nothing because every rule it names is in
    preview and preview is off (`--select TPU302` without `--preview`)."""
    if preview:
        return []
    out: list[str] = []
    for layer in layers:
        for selector in (*(layer.select or ()), *layer.extend_select):
            if selector == "ALL":
                continue
            matched = [r for r in catalogue() if not r.always_on and _matches(selector, r)[0]]
            if matched and all(r.preview for r in matched):
                message = f"Selection `{selector}` has no effect because preview is not enabled"
                if message not in out:
                    out.append(message)
    return out


def preview_codes() -> frozenset[str]:
    """The codes of the rules in preview."""
    return frozenset(r.code for r in catalogue() if r.preview)


def codes_matching(selectors: Iterable[str]) -> frozenset[str]:
    """Codes matched by any of `selectors` (used for per-file ignores and suppressions)."""
    out = set()
    for rule in catalogue():
        for selector in selectors:
            if selector == "ALL" or selector == rule.name or rule.code.startswith(selector):
                out.add(rule.code)
                break
    return frozenset(out)
