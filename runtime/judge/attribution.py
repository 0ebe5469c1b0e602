"""Tie a runtime finding at file:line to the static rules that explain it.

The lookup asks the engine for the file's diagnostics and takes every code whose diagnostic
covers the line, so it works for whichever rules exist. Some findings are about the data
pipeline rather than one line (a batch size, a missing drop_last, a hand-built sampler); for
those the rule's code anywhere in the same file is attached as well. Parent process only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RuleHit:
    code: str
    line: int
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "line": self.line, "message": self.message}


class RuleIndex:
    """Diagnostics per file, computed once per file with the default rules and the shapes in
    preview: the run has just observed the problem at that line, which is the evidence a
    preview shape lacks in general."""

    def __init__(self, config: Any = None) -> None:
        self._config = config
        self._cache: dict[str, list[Any]] = {}

    def _diagnostics(self, path: str) -> list[Any]:
        real = os.path.realpath(path)
        if real not in self._cache:
            self._cache[real] = self._check(real)
        return self._cache[real]

    def _check(self, path: str) -> list[Any]:
        import dataclasses

        from tpulint.config.settings import Config
        from tpulint.engine.source import check_source

        config = dataclasses.replace(self._config or Config(), preview=True)
        try:
            with open(path, encoding="utf-8") as handle:
                source = handle.read()
            return [d for d in check_source(source, path, config) if d.code.startswith("TPU")]
        except Exception:  # an engine failure must not cost the user the runtime report
            return []

    def at_line(self, path: str, line: int) -> list[RuleHit]:
        """One hit per code (a line with two `x[mask]` has two TPU202 diagnostics)."""
        hits: dict[str, RuleHit] = {}
        for d in self._diagnostics(path):
            if d.start.line <= line <= d.end.line and d.code not in hits:
                hits[d.code] = RuleHit(d.code, d.start.line, d.message)
        return sorted(hits.values(), key=lambda h: h.code)

    def in_file(self, path: str, codes: tuple[str, ...]) -> list[RuleHit]:
        hits: dict[str, RuleHit] = {}
        for d in sorted(self._diagnostics(path), key=lambda d: d.start.line):
            if d.code in codes and d.code not in hits:
                hits[d.code] = RuleHit(d.code, d.start.line, d.message)
        return list(hits.values())

    def explain(
        self, path: str | None, line: int | None, codes: tuple[str, ...] = ()
    ) -> list[RuleHit]:
        """Codes covering `path:line`, then any of `codes` elsewhere in the file."""
        if not path or not os.path.isfile(path):
            return []
        hits = self.at_line(path, line) if line else []
        seen = {h.code for h in hits}
        for hit in self.in_file(path, codes):
            if hit.code not in seen:
                hits.append(hit)
                seen.add(hit.code)
        return hits
