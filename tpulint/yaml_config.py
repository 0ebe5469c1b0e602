"""LightningCLI YAML configs: `tpulint check config.yaml`.

LightningCLI (`python main.py fit --config config.yaml`) reads the Trainer's arguments from
`trainer:` and the datamodule's from `data: init_args:`, so `tpu_cores: 8` or `batch_size: 10`
in a YAML file is as real as in Python. This module reads the block-mapping subset of YAML
these files use, keeping line/column positions (which a YAML library would drop), and runs
the rules that define `check_yaml`. Fixes are text edits, so comments and layout are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tpulint.diagnostics import Applicability, Diagnostic, Fix, Location

if TYPE_CHECKING:
    from tpulint.config import Config
    from tpulint.rule import Rule

YAML_SUFFIXES = (".yaml", ".yml")
_KEY_RE = re.compile(
    r"""^(?P<indent>[ ]*)(?P<dash>-[ ]+)?(?P<key>[A-Za-z_][\w.\-]*|"[^"]*"|'[^']*')"""
    r"""[ ]*:(?:[ ]+|$)(?P<rest>.*)$"""
)
_DASH_RE = re.compile(r"^(?P<indent>[ ]*)-(?:[ ]+(?P<rest>.*))?$")


def is_yaml_path(path: str) -> bool:
    return path.lower().endswith(YAML_SUFFIXES)


def _strip_comment(text: str) -> str:
    """`value  # comment` -> `value`, leaving `#` inside quotes alone."""
    quote = None
    for index, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (index == 0 or text[index - 1] in " \t"):
            return text[:index].rstrip()
    return text.rstrip()


def parse_scalar(text: str) -> Any:
    """YAML 1.2 core-schema scalars (what LightningCLI's loader gives for these keys)."""
    value = text.strip()
    if not value:
        return None
    if value[0] in "\"'" and value[-1] == value[0] and len(value) >= 2:
        return value[1:-1]
    lowered = value.lower()
    if lowered in ("null", "~"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    if re.fullmatch(r"[-+]?\d+", value):
        return int(value)
    if re.fullmatch(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?", value):
        return float(value)
    if value.startswith("[") and value.endswith("]"):
        inner = value[1:-1].strip()
        return [parse_scalar(p) for p in inner.split(",")] if inner else []
    return value


@dataclass(eq=False)
class YamlEntry:
    """A `key: value` pair, with the positions of its key and value."""

    key: str
    path: tuple[str, ...]
    line: int  # 1-based
    indent: int  # column of the key (0-based)
    key_start: Location
    key_end: Location
    raw: str | None  # the scalar text as written (None for a nested block)
    value_start: Location | None
    value_end: Location | None
    children: list[YamlEntry] = field(default_factory=list)
    last_line: int = 0  # the last line that belongs to this entry (its block included)

    @property
    def value(self) -> Any:
        return parse_scalar(self.raw) if self.raw is not None else None

    def child(self, key: str) -> YamlEntry | None:
        for entry in self.children:
            if entry.key == key:
                return entry
        return None


@dataclass
class YamlDocument:
    path: str
    text: str
    roots: list[YamlEntry]
    lines: list[str]

    def entries(self) -> Iterator[YamlEntry]:
        stack = list(reversed(self.roots))
        while stack:
            entry = stack.pop()
            yield entry
            stack.extend(reversed(entry.children))

    def find(self, *path: str) -> YamlEntry | None:
        """The entry at `path`, e.g. find("trainer", "tpu_cores")."""
        level = self.roots
        found = None
        for key in path:
            found = next((e for e in level if e.key == key), None)
            if found is None:
                return None
            level = found.children
        return found

    @property
    def is_lightning_cli(self) -> bool:
        keys = {e.key for e in self.roots}
        return bool(keys & {"trainer", "model", "data"})

    def line_indent(self, line: int) -> str:
        text = self.lines[line - 1]
        return text[: len(text) - len(text.lstrip(" "))]


def parse_yaml(text: str, path: str = "<config>") -> YamlDocument:
    """The block mappings of a YAML file, with positions. Items of a block sequence become
    entries keyed `[i]` (so `callbacks: - class_path: ...` is at ("callbacks", "[0]",
    "class_path")); flow collections and block scalars are kept as raw scalar text."""
    lines = text.splitlines()
    roots: list[YamlEntry] = []
    # Open blocks: (column that children must exceed, entry, next list-item index).
    stack: list[tuple[int, YamlEntry | None, list[int]]] = [(-1, None, [0])]
    block_scalar_indent: int | None = None

    def close_to(column: int) -> None:
        while len(stack) > 1 and stack[-1][0] >= column:
            stack.pop()

    def attach(entry: YamlEntry) -> None:
        parent = stack[-1][1]
        (roots if parent is None else parent.children).append(entry)
        for _, open_entry, _ in stack[1:]:
            if open_entry is not None:
                open_entry.last_line = entry.line

    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if block_scalar_indent is not None:
            if not stripped or indent > block_scalar_indent:
                continue
            block_scalar_indent = None
        if not stripped or stripped.startswith("#") or stripped in ("---", "..."):
            continue
        match = _KEY_RE.match(line)
        dash = _DASH_RE.match(line) if match is None or match.group("dash") else None
        key_col = indent
        if dash is not None:
            # A new item of a block sequence: it closes the previous item.
            close_to(indent)
            parent = stack[-1][1]
            counter = stack[-1][2]
            base = parent.path if parent is not None else ()
            item = YamlEntry(
                key=f"[{counter[0]}]",
                path=(*base, f"[{counter[0]}]"),
                line=number,
                indent=indent,
                key_start=Location(number, indent + 1),
                key_end=Location(number, indent + 2),
                raw=None,
                value_start=None,
                value_end=None,
                last_line=number,
            )
            counter[0] += 1
            attach(item)
            stack.append((indent, item, [0]))
            if match is None:
                continue
            key_col = indent + len(match.group("dash"))
        if match is None:
            continue
        close_to(key_col)
        parent = stack[-1][1]
        key_text = match.group("key")
        key = key_text.strip("\"'")
        base = parent.path if parent is not None else ()
        rest = _strip_comment(match.group("rest"))
        value_col = match.start("rest")
        nested = rest == ""
        if rest.startswith(("|", ">")):
            block_scalar_indent = key_col
        entry = YamlEntry(
            key=key,
            path=(*base, key),
            line=number,
            indent=key_col,
            key_start=Location(number, key_col + 1),
            key_end=Location(number, key_col + len(key_text) + 1),
            raw=None if nested else rest,
            value_start=None if nested else Location(number, value_col + 1),
            value_end=None if nested else Location(number, value_col + len(rest) + 1),
            last_line=number,
        )
        attach(entry)
        if nested:
            stack.append((key_col, entry, [0]))
    return YamlDocument(path, text, roots, lines)


# --- running rules on YAML ---------------------------------------------------------------


@dataclass
class YamlReport:
    rule: type[Rule]
    start: Location
    end: Location
    message: str
    fix: Fix | None = None


def _yaml_rules(enabled: frozenset[str]) -> list[type[Rule]]:
    from tpulint.registry import all_rules
    from tpulint.rule import Rule

    return [
        rule
        for rule in all_rules()
        if rule.code in enabled and rule.check_yaml is not Rule.check_yaml
    ]


def check_yaml_source(
    source: str, path: str, config: Config, enabled: frozenset[str]
) -> list[Diagnostic]:
    from tpulint.suppression import parse_suppressions

    document = parse_yaml(source, path)
    if not document.is_lightning_cli:
        return []
    diagnostics = []
    for rule_class in _yaml_rules(enabled):
        rule = rule_class(None)  # type: ignore[arg-type]  # YAML checks need no FileContext
        rule.yaml_config = config
        rule.check_yaml(document)
        for report in rule.yaml_reports:
            diagnostics.append(
                Diagnostic(
                    code=rule_class.code,
                    name=rule_class.name,
                    message=report.message,
                    path=path,
                    start=report.start,
                    end=report.end,
                    severity=rule_class.severity,
                    fix=report.fix,
                    noqa_lines=tuple(range(report.start.line, report.end.line + 1)),
                )
            )
    suppressions = parse_suppressions(source, language="yaml")
    kept = [d for d in diagnostics if not suppressions.suppresses(d)]
    if "TPL001" in enabled and not suppressions.empty:
        from tpulint.registry import rules_by_code, rules_by_name

        names = {name: rule.code for name, rule in rules_by_name().items()}
        kept += suppressions.unused(path, enabled, frozenset(rules_by_code()), names)
    kept.sort(key=lambda d: d.sort_key)
    return kept


def fixable(diagnostics: Sequence[Diagnostic], unsafe: bool) -> list[Diagnostic]:
    allowed = {Applicability.SAFE} | ({Applicability.UNSAFE} if unsafe else set())
    return [
        d
        for d in diagnostics
        if d.fix is not None and d.fix.applicability in allowed and d.fix.edits
    ]
