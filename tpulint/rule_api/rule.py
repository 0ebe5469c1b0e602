"""The rule base class: one readable, self-documenting class per check (Fixit's model).

A rule declares its code, name and fix safety, documents itself in its docstring with Ruff's
sections (What it does / Why is this bad on TPU? / Example / Use instead / Fix safety /
References), carries VALID and INVALID examples that run as tests, and implements libcst-style
`visit_<Node>` / `leave_<Node>` methods that call `self.report(...)`.

Rules never parse files, compute positions, read configuration files or print: the engine does
that. A rule reads `self.ctx` (the FileContext) and reports nodes, with an optional fix made of
node replacements and import changes.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Union

import libcst as cst

from tpulint.datatypes.diagnostics import Applicability, FileEdits, Fix, Severity

if TYPE_CHECKING:
    from tpulint.analysis.context import FileContext
    from tpulint.analysis.hot_code import ShapeTest
    from tpulint.analysis.project import FileView
    from tpulint.analysis.yaml_config import YamlDocument
    from tpulint.config.settings import Config
    from tpulint.datatypes.diagnostics import Edit, Location, RelatedLocation

NewNode = Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel]  # noqa: UP007 (a runtime alias)

CODE_PATTERN = re.compile(r"^[A-Z]{3}\d{3}$")
NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DOC_SECTIONS = (
    "What it does",
    "Why is this bad on TPU?",
    "Example",
    "Use instead",
    "Fix safety",
    "References",
)


@dataclass(frozen=True)
class ImportSpec:
    """An import a fix needs: `import <module> as <alias>` or `from <module> import <name>`."""

    module: str
    name: str | None = None
    alias: str | None = None

    @property
    def local_name(self) -> str:
        if self.alias:
            return self.alias
        if self.name:
            return self.name
        return self.module.split(".", 1)[0]


@dataclass
class FixSpec:
    """A fix as node replacements applied in one transform, plus import changes.

    A fix that rewrites code across files (the values a step collects and the epoch-end code
    in other modules that reads them) is given as text edits instead: `text_edits` holds the
    edits of every file it touches, the file being checked included, computed on the texts
    the project's files have now; `replacements` is then empty. The engine applies such a fix
    whole: alone when it edits only the checked file, through the runner otherwise."""

    applicability: Applicability
    message: str
    replacements: list[tuple[cst.CSTNode, NewNode]]
    add_imports: tuple[ImportSpec, ...] = ()
    # Local names whose import is removed if nothing uses them after the fix.
    remove_unused_imports: tuple[str, ...] = ()
    text_edits: tuple[FileEdits, ...] = ()

    @property
    def group(self) -> str:
        """A digest of all the text edits: the identity of a fix given as text edits."""
        if not self.text_edits:
            return ""
        import hashlib

        h = hashlib.sha1(self.message.encode())
        for file in sorted(self.text_edits, key=lambda f: f.path):
            h.update(f"\0{file.path}\0{file.digest}".encode())
            for edit in file.edits:
                h.update(repr((edit.start, edit.end, edit.content)).encode())
        return h.hexdigest()[:16]


@dataclass(frozen=True)
class RelatedNode:
    """Another node of the same problem, shown with the finding (SARIF relatedLocations)."""

    node: cst.CSTNode
    message: str


@dataclass
class Report:
    """What a rule reported, before positions and suppressions are applied.

    `related`: the other places of the same problem (nodes of this file, or locations in
    other files). `note`: a short clause that says what this finding adds when the engine
    folds it into another rule's finding of the same expression (`folds_into`)."""

    rule: type[Rule]
    node: cst.CSTNode
    message: str
    fix: FixSpec | None = None
    related: list[RelatedNode | RelatedLocation] = field(default_factory=list)
    note: str | None = None
    # The message or fix depends on other files than the project model digests for this
    # file (see Diagnostic.project_dependent).
    project_dependent: bool = False


@dataclass
class YamlReport:
    """What a rule reported on a YAML config: a span and an optional fix of text edits."""

    rule: type[Rule]
    start: Location
    end: Location
    message: str
    fix: Fix | None = None


@dataclass(frozen=True)
class Valid:
    """Code the rule must not report."""

    code: str
    config: dict[str, Any] = field(default_factory=dict)
    path: str = "example.py"


@dataclass(frozen=True)
class Invalid:
    """Code the rule must report.

    `expected_fix` is the source after applying this rule's safe and unsafe fixes;
    `expected_suggestion` the source after applying its display-only suggestions. `count` is
    the number of diagnostics expected from this rule, `line` the line of the first one, and
    `message` a substring of the first message.
    """

    code: str
    expected_fix: str | None = None
    expected_suggestion: str | None = None
    count: int = 1
    line: int | None = None
    message: str | None = None
    applicability: Applicability | None = None
    config: dict[str, Any] = field(default_factory=dict)
    path: str = "example.py"


class Rule:
    """Base class of all rules. Subclasses set the class attributes below."""

    code: ClassVar[str]
    name: ClassVar[str]
    # One line: what the rule finds (used in `tpulint rules`, SARIF and the docs index).
    summary: ClassVar[str]
    severity: ClassVar[Severity] = Severity.WARNING
    # The fix the rule offers at best: SAFE, UNSAFE, DISPLAY_ONLY, or None (no fix).
    fix_applicability: ClassVar[Applicability | None] = None
    # Whether some findings of the rule come without a fix ("Fix is sometimes available").
    fix_sometimes: ClassVar[bool] = False
    default_enabled: ClassVar[bool] = True
    # Status: a preview rule runs only with preview on (`--preview`, `preview = true`), as in
    # Ruff. A rule stays in preview until its precision on code read after it was frozen is
    # 95% or better; its page's "Status" section gives the evidence either way.
    preview: ClassVar[bool] = False
    # The file must contain one of these substrings for the rule to be able to fire; the
    # engine does not parse a file that no enabled rule can fire on.
    requires: ClassVar[tuple[str, ...]] = ()
    # The rule reports only in hot code (code that runs every step): the engine does not
    # parse a file in which the project model finds no hot function for such rules.
    hot_only: ClassVar[bool] = False
    # For a `hot_only` rule: the `ast` shapes its handlers can report at, each an `ast` node
    # type (the libcst node its handler visits, read with `ast`) with a test of the node
    # that the handler's own first checks imply, or None (any node of the type): the engine
    # does not parse a file for the rule unless one of the file's hot functions contains
    # one (`tpulint.analysis.hot_code`). Empty: any hot function. tests/test_screens.py
    # checks that every handler the rule defines has its node type here.
    hot_shapes: ClassVar[Mapping[type[ast.AST], ShapeTest | None]] = {}
    # The rule reports only at, or because of, a call whose callee's last name is one of
    # these (`Trainer` for `pl.Trainer(...)`, or for a name the imports qualify to
    # `lightning.Trainer`): the engine does not run it on a file without such a call
    # (`Syntax.calls` of the project model). Empty: no such screen.
    screen_calls: ClassVar[frozenset[str]] = frozenset()
    VALID: ClassVar[Sequence[Valid]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()
    # The default title of the rule's fixes ("Drop `.item()`").
    fix_message: ClassVar[str | None] = None
    # Rules enabled when this rule's examples run (default: this rule alone).
    example_selection: ClassVar[tuple[str, ...] | None] = None
    # One problem, one finding: the engine merges this rule's findings within one statement
    # into the first (the others become related places), unless this is False.
    one_per_statement: ClassVar[bool] = True
    # Codes of rules whose finding on the same expression is the same problem: a finding
    # of this rule whose node overlaps one of theirs in the same statement is folded into
    # that finding (its `note` appended to the message) instead of reported twice.
    folds_into: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def can_fire(cls, source: str, view: FileView) -> bool:
        """Whether the rule can fire in this file at all (after `requires` matched): its
        declared screens (`hot_only`, `screen_calls`), then its own `applies`. The engine
        does not run the rule otherwise, and does not parse a file in which no rule can
        fire. Every screen must be implied by the rule's logic: tests/test_screens.py checks
        that screened and unscreened runs report the same on every fixture."""
        if cls.hot_only:
            if not view.has_hot_code:
                return False
            if cls.hot_shapes:
                found = view.hot_code(source)
                if found is not None and not found.contains(cls.hot_shapes):
                    return False
        syntax = view.module.syntax
        if syntax is not None and cls.screen_calls and syntax.calls.isdisjoint(cls.screen_calls):
            return False
        return cls.applies(source, view)

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        """The rule's own screen, from the file's text and the project model's view of it
        (`view.module.syntax`: what the code contains; the classes' kinds; hot functions).
        It must be implied by the rule's logic: a file it rules out is one the rule would
        report nothing in."""
        return True

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.reports: list[Report] = []
        self.yaml_reports: list[YamlReport] = []
        self.yaml_config: Config | None = None  # set when checking a YAML config

    @property
    def preview_mode(self) -> bool:
        """Whether preview mode is on: shapes of a stable rule that have not earned the
        default set yet report only then."""
        config = self.ctx.config if self.ctx is not None else self.yaml_config
        return bool(getattr(config, "preview", False))

    # --- reporting -------------------------------------------------------------------

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        replacement: NewNode | None = None,
        replaces: cst.CSTNode | None = None,
        fix: FixSpec | None = None,
        applicability: Applicability | None = None,
        fix_message: str | None = None,
        add_imports: Sequence[ImportSpec] = (),
        remove_unused_imports: Sequence[str] = (),
        related: Sequence[RelatedNode | RelatedLocation] = (),
        note: str | None = None,
        project_dependent: bool = False,
    ) -> None:
        """Report `node`. A fix is either a full FixSpec or a single `replacement` for
        `replaces` (default: `node`) with `applicability` (default: the rule's). `related`
        are the other places of the same problem; `note` is what this finding adds when it
        is folded into another rule's finding (see `folds_into`). `project_dependent`: the
        message or fix was read from other files of the project (a cached result is reused
        only for the same project)."""
        if fix is None and replacement is not None:
            fix = FixSpec(
                applicability=applicability or self.fix_applicability or Applicability.DISPLAY_ONLY,
                message=fix_message or self.fix_title(),
                replacements=[(replaces if replaces is not None else node, replacement)],
                add_imports=tuple(add_imports),
                remove_unused_imports=tuple(remove_unused_imports),
            )
        self.reports.append(
            Report(
                type(self),
                node,
                message,
                fix,
                related=list(related),
                note=note,
                project_dependent=project_dependent,
            )
        )

    # --- LightningCLI YAML configs -----------------------------------------------------

    def check_yaml(self, document: YamlDocument) -> None:
        """Rules that also apply to LightningCLI YAML configs (`trainer:` keys,
        `data: init_args: batch_size`) override this and call `report_yaml`."""

    def report_yaml(
        self,
        start: Location,
        end: Location,
        message: str,
        *,
        edits: Sequence[Edit] = (),
        applicability: Applicability | None = None,
        fix_message: str | None = None,
    ) -> None:
        """Report a span of a YAML config, with an optional fix made of text edits."""
        fix = None
        if edits:
            fix = Fix(
                applicability or self.fix_applicability or Applicability.DISPLAY_ONLY,
                fix_message or self.fix_title(),
                tuple(edits),
            )
        self.yaml_reports.append(YamlReport(type(self), start, end, message, fix))

    @classmethod
    def fix_title(cls) -> str:
        return cls.fix_message or f"Apply the {cls.name} fix"

    # --- documentation ---------------------------------------------------------------

    @classmethod
    def family(cls) -> str:
        from tpulint.config.registry import family_of

        return family_of(cls.code)

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        """The docstring's `## Section` blocks, dedented, by title."""
        doc = inspect.cleandoc(cls.__doc__ or "")
        sections: dict[str, str] = {}
        title = None
        lines: list[str] = []
        for line in doc.splitlines():
            if line.startswith("## "):
                if title is not None:
                    sections[title] = textwrap.dedent("\n".join(lines)).strip()
                title = line[3:].strip()
                lines = []
            elif title is not None:
                lines.append(line)
        if title is not None:
            sections[title] = textwrap.dedent("\n".join(lines)).strip()
        return sections

    @classmethod
    def fix_availability(cls) -> str:
        from tpulint.config.registry import fix_availability

        return fix_availability(cls.fix_applicability, cls.fix_sometimes)


def last_names(*groups: Iterable[str]) -> frozenset[str]:
    """The last names of qualified names (`torch.cuda.amp.autocast` -> `autocast`): a rule's
    `screen_calls` from the qualified callees it reports."""
    return frozenset(name.rsplit(".", 1)[-1] for group in groups for name in group)


def code_block(section: str) -> str | None:
    """The first ```python fenced block of a doc section."""
    match = re.search(r"```(?:python|py)?\n(.*?)```", section, re.DOTALL)
    return match.group(1) if match else None
