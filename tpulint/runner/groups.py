"""Fixes that span files (Fix.group, Fix.related): which of them can be applied whole, and the
files they edit.

A fix whose edits reach other files (the values a step collects, and the epoch-end code in a
callback or a metrics module that reads them) is applied whole or not at all: every file it
touches must be part of the run, still hold the text the fix was computed on, and, when the
files are to be written, be writable; its edits must not overlap another accepted fix's.
Each touched file is then fixed again from its text as read, with the accepted fixes' edits
first (`fix_source(..., extra_edits=...)`) and its own fixes on top; a file that cannot be
fixed that way drops the fixes that touch it.

    groups = collect(findings)                 # from (path, text, diagnostic) triples
    accepted, notices = accept(groups, text_of, writable)
    results, accepted, notices = refix(accepted, fix_file)

Used by `tpulint fix` (runner/paths.py), `verify --compare` and `fix --prove` (runtime/).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tpulint.datatypes.diagnostics import Diagnostic, Edit

if TYPE_CHECKING:
    from tpulint.engine.source import FixResult


@dataclass
class Group:
    """One fix that edits several files."""

    key: str
    edits: dict[str, list[Edit]] = field(default_factory=dict)  # real path -> edits
    digests: dict[str, str] = field(default_factory=dict)  # real path -> sha1 of its text
    findings: list[tuple[str, Diagnostic]] = field(default_factory=list)  # (real path, finding)

    def label(self, shown: Callable[[str], str] = lambda p: p) -> str:
        path, diagnostic = self.findings[0]
        return f"{shown(path)}:{diagnostic.start.line} {diagnostic.code}"


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def real(path: str) -> str:
    return os.path.realpath(path)


def collect(findings: Iterable[tuple[str, str, Diagnostic]]) -> dict[str, Group]:
    """The groups of the findings' fixes: (path, the file's text as the finding saw it,
    finding) for every finding that may be fixed."""
    groups: dict[str, Group] = {}
    for path, text, diagnostic in findings:
        fix = diagnostic.fix
        if fix is None or not fix.group or not fix.related:
            continue
        group = groups.setdefault(fix.group, Group(fix.group))
        own = real(path)
        group.edits.setdefault(own, list(fix.edits))
        group.digests.setdefault(own, sha1(text))
        for other in fix.related:
            target = real(other.path)
            group.edits.setdefault(target, list(other.edits))
            group.digests.setdefault(target, other.digest)
        group.findings.append((own, diagnostic))
    return groups


def accept(
    groups: Iterable[Group],
    text_of: Callable[[str], str | None],
    writable: Callable[[str, str], str | None] | None = None,
    shown: Callable[[str], str] = lambda p: p,
) -> tuple[list[Group], list[str]]:
    """The groups that can be applied (`text_of(path)`: the file's text in this run, None
    when it is not part of it; `writable(path, text)`: why it cannot be written, or None),
    and why the others are not."""
    accepted: list[Group] = []
    notices: list[str] = []
    for group in groups:
        problem = None
        for path, digest in group.digests.items():
            text = text_of(path)
            if text is None:
                problem = f"{shown(path)} is not among the files being fixed"
            elif sha1(text) != digest:
                problem = f"{shown(path)} changed since the fix was computed"
            elif writable is not None:
                refused = writable(path, text)
                problem = f"{shown(path)}: {refused}" if refused else None
            if problem is not None:
                break
        if problem is not None:
            notices.append(f"{problem}; the fix of {group.label(shown)} is not applied")
            continue
        if any(_overlap(group, other) for other in accepted):
            continue  # applied by a later run, once the other fix is in
        accepted.append(group)
    return accepted, notices


def refix(
    accepted: list[Group],
    fix_file: Callable[[str, list[Edit]], FixResult],
    shown: Callable[[str], str] = lambda p: p,
) -> tuple[dict[str, FixResult], list[Group], list[str]]:
    """Fix each file the accepted groups touch with their edits first; a file whose fix
    fails drops the groups that touch it (the others are fixed again without them). Returns
    the results by real path (the groups' findings added to the files they are in), the
    groups applied, and why the others were not."""
    accepted = list(accepted)
    notices: list[str] = []
    while True:
        touched: dict[str, list[Edit]] = {}
        for group in accepted:
            for path, edits in group.edits.items():
                touched.setdefault(path, []).extend(edits)
        results: dict[str, FixResult] = {}
        failed: Group | None = None
        for path, edits in touched.items():
            result = fix_file(path, edits)
            if result.error is not None:
                failed = next(g for g in accepted if path in g.edits)
                notices.append(
                    f"{shown(path)}: {result.error}; the fix of {failed.label(shown)} is not"
                    " applied"
                )
                break
            results[path] = result
        if failed is None:
            break
        accepted.remove(failed)
    for group in accepted:
        for path, diagnostic in group.findings:
            results[path].fixed.append(diagnostic)
    return results, accepted, notices


def _overlap(a: Group, b: Group) -> bool:
    for path, edits in a.edits.items():
        for x in edits:
            for y in b.edits.get(path, ()):
                if x == y:
                    continue  # the same edit (two fixes that both add `import torch`)
                if x.start < y.end and y.start < x.end:
                    return True
                if x.start == x.end == y.start == y.end:
                    return True
    return False
