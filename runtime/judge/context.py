"""What every check needs to turn observations into causes: the run's settings, how to show a
source location, and the rule lookup. Parent process only; standard library only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from tpulint.runtime.frames import CodeFilter
from tpulint.runtime.judge.attribution import RuleIndex
from tpulint.runtime.judge.report import Cause, Location


@dataclass
class Context:
    cores: int
    warmup: int
    batch_multiple: int
    cwd: str
    rules: RuleIndex
    steps_per_epoch: int | None = None
    user_code: CodeFilter | None = None  # the child's notion of the user's files
    aliases: dict[str, str] = field(default_factory=dict)  # fixed copy -> "model.py (fixed)"
    emulated: bool = True  # PJRT CPU standing in for TPU cores (what falls back differs)

    def location(self, site: dict[str, Any] | None) -> Location | None:
        if not site:
            return None
        path = site["path"]
        if path in self.aliases:
            return Location(self.aliases[path], int(site["line"]), site.get("function"), True)
        relative = os.path.relpath(path, self.cwd) if self.cwd else path
        shown = path if relative.startswith("..") else relative
        for marker in ("site-packages", "dist-packages"):
            # A library frame reads better as `lightning/fabric/...py` than a venv path.
            index = path.find(os.sep + marker + os.sep)
            if index >= 0:
                shown = path[index + len(marker) + 2 :]
        return Location(
            shown, int(site["line"]), site.get("function"), bool(site.get("user", True))
        )

    def cause(
        self,
        check: str,
        kind: str,
        severity: str,
        message: str,
        site: dict[str, Any] | None = None,
        codes: tuple[str, ...] = (),
        explain: bool = True,
        **extra: Any,
    ) -> Cause:
        """A cause at `site`, explained by the rules covering that line. A finding about a
        whole loader or sampler names its rule family in `codes`: then only those codes count,
        at that line or anywhere in the file (the batch size may be set far from the loader).
        `explain=False`: no rule explains it (the line is only where to look)."""
        rules = []
        if explain and site and site.get("user", True):
            rules = self.rules.explain(site["path"], int(site["line"]), codes)
            if codes:
                rules = [hit for hit in rules if hit.code in codes]
        return Cause(check, kind, severity, message, self.location(site), rules, **extra)


def plural(count: float, word: str, many: str | None = None) -> str:
    if isinstance(count, float) and not count.is_integer():
        return f"{count:.2f} {many or word + 's'}"
    count = int(count)
    return f"{count} {word if count == 1 else (many or word + 's')}"


def status_of(causes: list[Cause]) -> str:
    severities = {c.severity for c in causes}
    if "fail" in severities:
        return "fail"
    if "warn" in severities:
        return "warn"
    return "pass"


def span(values: list[int]) -> str:
    """`5` or `5..10`, for sizes and steps."""
    if not values:
        return "-"
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}..{high}"
