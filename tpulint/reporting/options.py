"""What every renderer is told about a run (its own module, so the renderers and the package
that dispatches to them do not import each other)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ReportOptions:
    unsafe_fixes: bool = False
    color: bool = False
    files_checked: int = 0
    # Reads a file's current text (for source excerpts); None when unavailable.
    source_lookup: Callable[[str], str | None] | None = None
    scope: str = "tpu"  # the scope the findings were chosen by (tpulint.analysis.scope)
    outside_scope: int = 0  # findings the scope left out
    # The roots that left some of them out as unreached (`scope_roots`): "the training entry
    # points (train.py)" when a project with no TPU entry point is scoped by its scripts.
    scope_roots: tuple[str, ...] = ()
