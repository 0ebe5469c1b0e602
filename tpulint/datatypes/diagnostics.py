"""The data a check produces: diagnostics, their fixes and text edits.

These are plain, picklable, JSON-round-trippable values: they cross process boundaries (the
parallel runner), are stored in the cache, and are what every reporter renders.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any


class Applicability(str, enum.Enum):
    """How a fix may be applied, following Ruff's definitions.

    - SAFE: never changes runtime behaviour; applied by `tpulint fix --apply`.
    - UNSAFE: may change behaviour (or drop comments); applied only with `--unsafe-fixes`.
    - DISPLAY_ONLY: a suggestion shown to the user, never applied automatically.
    """

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"

    @property
    def rank(self) -> int:
        return {"safe": 0, "unsafe": 1, "display-only": 2}[self.value]


class Severity(str, enum.Enum):
    """How bad a finding is on a TPU: a hard error, a performance problem, or advice."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, order=True)
class Location:
    """A 1-based line and 1-based column (in characters)."""

    line: int
    column: int

    def to_json(self) -> dict[str, int]:
        return {"line": self.line, "column": self.column}


@dataclass(frozen=True)
class Edit:
    """Replace the text from `start` (inclusive) to `end` (exclusive) with `content`."""

    start: Location
    end: Location
    content: str

    def to_json(self) -> dict[str, Any]:
        return {"content": self.content, "start": self.start.to_json(), "end": self.end.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Edit:
        return cls(Location(**data["start"]), Location(**data["end"]), data["content"])


@dataclass(frozen=True)
class FileEdits:
    """Text edits of another file that a fix makes together with its own (a rewrite of code
    shared across files: the values a step collects and the epoch-end code that reads them).
    `path` is absolute; `digest` is the sha1 of the text the edits were computed on, so they
    are applied only to that text."""

    path: str
    edits: tuple[Edit, ...]
    digest: str

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "digest": self.digest,
            "edits": [e.to_json() for e in self.edits],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileEdits:
        return cls(data["path"], tuple(Edit.from_json(e) for e in data["edits"]), data["digest"])


@dataclass(frozen=True)
class Fix:
    """A fix: `edits` in the finding's own file. A fix that also edits other files lists them
    in `related` and names itself with `group`, a digest of all its edits: it is applied
    whole or not at all, and findings that share it share the group."""

    applicability: Applicability
    message: str
    edits: tuple[Edit, ...] = ()
    related: tuple[FileEdits, ...] = ()
    group: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "applicability": self.applicability.value,
            "message": self.message,
            "edits": [e.to_json() for e in self.edits],
        }
        if self.group:
            out["group"] = self.group
            out["related"] = [r.to_json() for r in self.related]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fix:
        return cls(
            Applicability(data["applicability"]),
            data["message"],
            tuple(Edit.from_json(e) for e in data["edits"]),
            tuple(FileEdits.from_json(r) for r in data.get("related", ())),
            data.get("group", ""),
        )


@dataclass(frozen=True)
class RelatedLocation:
    """Another place that belongs to a finding (the other tensors of one f-string, the
    config field that feeds a Trainer argument): SARIF's `relatedLocations`."""

    path: str
    start: Location
    end: Location
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "start": self.start.to_json(),
            "end": self.end.to_json(),
            "message": self.message,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RelatedLocation:
        return cls(
            data["path"], Location(**data["start"]), Location(**data["end"]), data["message"]
        )


@dataclass(frozen=True)
class Diagnostic:
    code: str
    name: str
    message: str
    path: str
    start: Location
    end: Location
    severity: Severity = Severity.WARNING
    fix: Fix | None = None
    # Lines on which a suppression comment silences this diagnostic (start..end of the node).
    noqa_lines: tuple[int, ...] = field(default=(), compare=False)
    # Its fix or message depends on other files of the project (not only on facts the
    # project model digests per file): a cached copy is valid only for the same project.
    project_dependent: bool = field(default=False, compare=False)
    # Why the code is outside the default scope (it never trains on a TPU: a CUDA-only
    # branch, inference, unreached from the entry points: `unreached_reason`), or None when
    # it is inside.
    scope: str | None = field(default=None, compare=False)
    # The other places of the same problem (one problem, one finding).
    related: tuple[RelatedLocation, ...] = field(default=(), compare=False)

    @property
    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.start.line, self.start.column, self.code)

    def fixable(self, unsafe: bool = False) -> bool:
        if self.fix is None:
            return False
        if self.fix.applicability is Applicability.SAFE:
            return True
        return unsafe and self.fix.applicability is Applicability.UNSAFE

    def with_path(self, path: str) -> Diagnostic:
        return Diagnostic(
            self.code,
            self.name,
            self.message,
            path,
            self.start,
            self.end,
            self.severity,
            self.fix,
            self.noqa_lines,
            self.project_dependent,
            self.scope,
            tuple(
                RelatedLocation(path, r.start, r.end, r.message) if r.path == self.path else r
                for r in self.related
            ),
        )

    def with_scope(self, scope: str | None) -> Diagnostic:
        return replace(self, scope=scope)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "path": self.path,
            "start": self.start.to_json(),
            "end": self.end.to_json(),
            "severity": self.severity.value,
            "fix": self.fix.to_json() if self.fix else None,
            "noqa_lines": list(self.noqa_lines),
            "scope": self.scope,
            "related": [r.to_json() for r in self.related],
            **({"project_dependent": True} if self.project_dependent else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Diagnostic:
        return cls(
            code=data["code"],
            name=data["name"],
            message=data["message"],
            path=data["path"],
            start=Location(**data["start"]),
            end=Location(**data["end"]),
            severity=Severity(data["severity"]),
            fix=Fix.from_json(data["fix"]) if data.get("fix") else None,
            noqa_lines=tuple(data.get("noqa_lines", ())),
            project_dependent=bool(data.get("project_dependent", False)),
            scope=data.get("scope"),
            related=tuple(RelatedLocation.from_json(r) for r in data.get("related", ())),
        )


def unreached_reason(roots: str, names: Sequence[str]) -> str:
    """The scope reason of code the scope's roots do not reach: `roots` says what they are
    ("TPU": the project's TPU entry points; "training": the scripts that train today on
    another accelerator, in a project with no TPU entry point), `names` their files."""
    shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    return f"not reached from the {roots} entry points ({shown})"


_UNREACHED = re.compile(r"not reached from the (\w+) entry points \((.+)\)\Z")


def scope_roots(reasons: Iterable[str | None]) -> tuple[str, ...]:
    """The roots the `unreached_reason`s among `reasons` name, each once, sorted: `("the
    training entry points (train.py)",)` (a run may check several projects)."""
    found = set()
    for reason in reasons:
        match = _UNREACHED.fullmatch(reason or "")
        if match is not None:
            found.add(f"the {match.group(1)} entry points ({match.group(2)})")
    return tuple(sorted(found))
