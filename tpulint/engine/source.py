"""Checking and fixing one file's source: the core every front end (CLI, pre-commit, a future
language server) calls.

    check_source(text, path, config) -> list[Diagnostic]
    fix_source(text, path, config, unsafe=False) -> FixResult

The engine knows rules only through the registry and the Rule interface: it picks the enabled
rules whose prefilter matches the text, parses once, runs the shared analysis once, walks the
tree once with every rule's handlers batched, then applies suppressions and turns reports
into diagnostics with positions and fixes.
"""

from __future__ import annotations

import itertools
import re
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.fixes import apply_fixes, fix_edits, positions_needed
from tpulint.analysis.imports import Aliases
from tpulint.analysis.project import FileView, ProjectModel, build_model, module_name_for_path
from tpulint.analysis.scope_facts import text_digest
from tpulint.analysis.semantic import analyze_module
from tpulint.analysis.shell_script import is_shell_path, shell_comments
from tpulint.analysis.summary import summarize
from tpulint.analysis.suppression import Suppressions, add_noqa, parse_suppressions
from tpulint.analysis.walker import Dispatcher
from tpulint.analysis.yaml_config import (
    check_yaml_file,
    hydra_base_files,
    is_yaml_path,
    read_hydra_bases,
    read_yaml,
)
from tpulint.config.registry import (
    catalogue,
    family_of,
    infos_by_code,
    infos_by_name,
    rules_by_code,
)
from tpulint.config.settings import Config
from tpulint.datatypes import roundtrip
from tpulint.datatypes.diagnostics import (
    Applicability,
    Diagnostic,
    Edit,
    Fix,
    Location,
    RelatedLocation,
    Severity,
)
from tpulint.engine.deep_stack import TooDeep, call_deep
from tpulint.engine.merging import merge_reports
from tpulint.engine.yaml_files import splat_section, spread_verdict
from tpulint.rule_api.rule import FixSpec, RelatedNode, Report, Rule

MAX_FIX_ITERATIONS = 10


class InternalError(Exception):
    """A rule or the engine failed on a file (a bug in tpulint, not in the user's code)."""


@dataclass
class FixResult:
    source: str  # the fixed source (the original one when nothing was fixed)
    fixed: list[Diagnostic] = field(default_factory=list)  # findings whose fix was applied
    remaining: list[Diagnostic] = field(default_factory=list)  # findings after fixing
    error: str | None = None  # why nothing was written (e.g. the result did not parse)
    # The file was edited by a fix of findings in other files (`extra_edits`).
    rewritten: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.fixed) or self.rewritten


@dataclass
class _Analysis:
    module: cst.Module | None
    reports: list[Report]
    diagnostics: list[Diagnostic]  # positioned, unsuppressed (no TPL001 yet)
    fix_specs: dict[int, FixSpec]  # index in diagnostics -> its FixSpec (fixable only)
    suppressions: Suppressions
    parents: dict[int, cst.CSTNode] = field(default_factory=dict)


# Whether the prefilters and screens rule files out (see `unscreened`).
_SCREENED = [True]


@contextmanager
def unscreened() -> Iterator[None]:
    """Within it, every enabled rule runs on every file: no text prefilter, no screen. What
    the screens' soundness is tested against (tests/test_screens.py); worker processes forked
    inside it inherit it."""
    _SCREENED[0] = False
    try:
        yield
    finally:
        _SCREENED[0] = True


def _rule_classes(enabled: frozenset[str], source: str) -> list[type[Rule]]:
    """The enabled rules whose prefilter matches `source` (each distinct token is searched
    for once per file, however many rules share it)."""
    out = []
    found: dict[str, bool] = {}
    screened = _SCREENED[0]
    for rule in catalogue():  # the manifest: a rule module is loaded only if it may fire
        if rule.code not in enabled or rule.code.startswith("TPL"):
            continue
        if rule.requires and screened:
            for token in rule.requires:
                hit = found.get(token)
                if hit is None:
                    hit = found[token] = token in source
                if hit:
                    break
            else:
                continue
        out.append(rules_by_code()[rule.code])
    return out


_LIBCST_PARSES = [0]  # source texts this process parsed with libcst to analyse them


def libcst_parses() -> int:
    """How many texts this process has parsed with libcst for analysis (the runner reports
    per file whether it was parsed: `-v` prints how many files the screens let through)."""
    return _LIBCST_PARSES[0]


def parse_trusted(source: str) -> cst.Module:
    """`cst.parse_module` without re-validating every node the parser builds.

    libcst validates each node in `__post_init__`, which is meant for nodes built by hand:
    the parser only builds nodes from text it accepted (libcst's own PERF note in
    `CSTNode.__post_init__` suggests skipping it when parsing). Skipping it saves a tenth of
    the parse. Nodes built later (by fixes) are validated as usual, and fixed code is still
    re-parsed with validation before it is written."""
    _LIBCST_PARSES[0] += 1
    validate = cst.CSTNode.__post_init__
    cst.CSTNode.__post_init__ = _no_validation  # type: ignore[method-assign]
    try:
        return cst.parse_module(source)
    finally:
        cst.CSTNode.__post_init__ = validate  # type: ignore[method-assign]


def _no_validation(self: cst.CSTNode) -> None:
    return None


def file_view(
    source: str, path: str, config: Config, project: ProjectModel | None = None
) -> FileView:
    """The project model's view of a file: from `project` when it holds the file, else from
    a model of this source alone."""
    view = project.view(path) if project is not None else None
    if view is None:
        name = path if path not in ("-", "<stdin>") else "<stdin>"
        model = build_model([(name, source)], config.hot_methods, config.lightning_version)
        view = model.view(name)
        assert view is not None
    view.base = str(config.root)
    return view


def would_parse(source: str, path: str, config: Config) -> bool:
    """Whether some enabled rule's text prefilter matches this file: what `check_source`
    parses at most (the project model's screens, `Rule.can_fire`, rule out more; `-v` counts
    the files really parsed). The benchmarks' old floor parsed exactly these files."""
    if is_yaml_path(path) or is_shell_path(path):
        return False
    return bool(_rule_classes(config.enabled_for(_relpath(path, config)), source))


def _relpath(path: str, config: Config) -> str:
    import os

    if path in ("-", "<stdin>"):
        return path
    try:
        return os.path.relpath(os.path.abspath(path), config.root).replace(os.sep, "/")
    except ValueError:
        return path.replace(os.sep, "/")


def syntax_error_diagnostic(path: str, exc: Exception, source: str | None = None) -> Diagnostic:
    """TPL002 for a file that does not parse. Python's own parser gives the clearest message
    and position; libcst's is used when only libcst rejects the code."""
    line, column, message = 1, 1, str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    valid_python = False
    if source is not None:
        import ast
        import warnings

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ast.parse(source)
        except SyntaxError as syntax:
            line = syntax.lineno or 1
            column = syntax.offset or 1
            message = syntax.msg
        except (ValueError, RecursionError, MemoryError):
            pass
        else:
            match = re.search(r"error at (\d+):(\d+)", getattr(exc, "message", "") or "")
            if match:
                line, column = int(match.group(1)), int(match.group(2)) + 1
            valid_python = True
            message = f"libcst cannot parse this file ({getattr(exc, 'message', message)})"
    if valid_python:
        # Python accepts the code; only tpulint's parser does not: not a syntax error.
        return unanalysable_diagnostic(
            path, f"Python accepts this code, but {message}", Location(line, column)
        )
    return Diagnostic(
        code="TPL002",
        name="syntax-error",
        message=f"Not valid Python, not checked: {message}",
        path=path,
        start=Location(line, column),
        end=Location(line, column),
        severity=Severity.ERROR,
    )


def _python_syntax_error(source: str, path: str, view: FileView | None) -> list[Diagnostic]:
    """TPL002 for a file that no rule needs parsed but that Python cannot parse. The project
    model has already read the file with `ast` when it holds it (`view`); its verdict that
    the file parses is taken as is, any other case is parsed here (`ast` is about ten times
    faster than libcst). Code too deep for `ast` (RecursionError) is not a syntax error."""
    if view is not None and view.module.parsed:
        return []
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except (SyntaxError, ValueError) as exc:  # ValueError: a null byte (Python < 3.12)
        return [syntax_error_diagnostic(path, exc, source)]
    except (RecursionError, MemoryError):
        return []
    return []


# A directive TPL001 can find unused: one of tpulint's own, or one naming a TPU/TPL code.
_OUR_DIRECTIVE = re.compile(r"tpulint:|\bTP[UL]\d", re.IGNORECASE)


def _quiet_suppressions(source: str) -> Suppressions:
    """The suppressions of a file with no findings. Only TPL001 reads them then, and it
    reports only directives that are tpulint's own or name its codes: without such text they
    are not parsed (finding comments runs Python's tokenizer over the whole file)."""
    if _OUR_DIRECTIVE.search(source) is None:
        return Suppressions()
    return parse_suppressions(source)


def unanalysable_diagnostic(path: str, reason: str, location: Location | None = None) -> Diagnostic:
    """TPL004 for valid Python the engine could not analyse (see meta_rules)."""
    where = location or Location(1, 1)
    return Diagnostic(
        code="TPL004",
        name="unanalysable-file",
        message=f"Not checked: {reason}",
        path=path,
        start=where,
        end=where,
        severity=Severity.ERROR,
    )


def _analyze(
    source: str,
    path: str,
    config: Config,
    project: ProjectModel | None,
    enabled: frozenset[str],
    with_edits: bool,
    module: cst.Module | None = None,
) -> _Analysis:
    """`module`, when given, is `source` already parsed."""
    rules = _rule_classes(enabled, source)
    if not rules:
        # No rule can fire here, but a file Python cannot parse is reported all the same.
        view = project.view(path) if project is not None else None
        errors = _python_syntax_error(source, path, view)
        suppressions = parse_suppressions(source) if errors else _quiet_suppressions(source)
        return _Analysis(None, [], errors, {}, suppressions)
    view = file_view(source, path, config, project)
    if view.module.parsed and _SCREENED[0]:
        # What the project model knows (what the code contains, which code runs every step,
        # the classes' kinds) rules out more rules than their text prefilter; a file no rule
        # can fire in is not parsed at all. (A file `ast` rejects is parsed, to report the
        # syntax error.)
        rules = [rule for rule in rules if rule.can_fire(source, view)]
        if not rules:
            return _Analysis(None, [], [], {}, _quiet_suppressions(source))
    suppressions = parse_suppressions(source)
    if module is None:
        try:
            module = parse_trusted(source)
        except (cst.ParserSyntaxError, ValueError, SyntaxError) as exc:
            diagnostic = syntax_error_diagnostic(path, exc, source)
            return _Analysis(None, [], [diagnostic], {}, suppressions)

    module_name, is_package = (
        module_name_for_path(path) if path not in ("-", "<stdin>") else (None, False)
    )
    # The analysis walk fills the parent links and caches each node's children for the
    # rules' walk of the same tree.
    parents: dict[int, cst.CSTNode] = {}
    children_of: dict[int, list[cst.CSTNode]] = {}
    analysis = analyze_module(
        module,
        Aliases(module_name, is_package),
        view.model.lightning_table(),
        config.hot_methods,
        parents=parents,
        children_of=children_of,
        view=view,
    )
    aliases = Aliases(module_name, is_package)
    aliases.bind_late(module)
    ctx = FileContext(
        path=path,
        source=source,
        module=module,
        config=config,
        aliases=aliases,
        analysis=analysis,
    )
    ctx.parents = parents
    instances = [rule(ctx) for rule in rules]
    dispatcher = Dispatcher()
    dispatcher.add(ctx, only=FileContext.ENTER_HANDLERS)
    for instance in instances:
        dispatcher.add(instance)
    dispatcher.add(ctx, only=FileContext.LEAVE_HANDLERS)
    try:
        dispatcher.walk(module, parents=parents, children_of=children_of)
    except (RecursionError, MemoryError):
        raise  # too deep or too big, not a bug: call_deep and the caller report it
    except Exception as exc:  # a bug in a rule must not take the whole run down
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        raise InternalError(
            f"{type(exc).__name__}: {exc} (at {frame.filename.rsplit('/', 1)[-1]}:{frame.lineno})"
        ) from exc

    reports = [r for instance in instances for r in instance.reports]
    # One problem, one finding (engine/merging.py).
    reports = merge_reports(reports, ctx.parents, module.code_for_node)
    ctx.release()
    if not reports:
        return _Analysis(module, [], [], {}, suppressions, ctx.parents)

    # The nodes the value inference placed keep their spans: most reports are in functions
    # whose code was generated already.
    positions = ctx.positions
    wanted: list[cst.CSTNode] = [r.node for r in reports]
    wanted += [x.node for r in reports for x in r.related if isinstance(x, RelatedNode)]
    fixes = [r.fix for r in reports if r.fix is not None]
    if with_edits and fixes:
        wanted += positions_needed(module, fixes, ctx.parents)
    positions.resolve(wanted, parents)

    diagnostics: list[Diagnostic] = []
    fix_specs: dict[int, FixSpec] = {}
    for report in reports:
        start, end = positions.range(report.node)
        rule = report.rule
        fix = None
        if report.fix is not None and report.fix.text_edits:
            fix = _text_fix(report.fix, path)
        elif report.fix is not None:
            edits = fix_edits(module, report.fix, positions, ctx.parents) if with_edits else ()
            fix = Fix(report.fix.applicability, report.fix.message, edits)
        related = []
        noqa_lines = set(range(start.line, end.line + 1))
        for place in report.related:
            if isinstance(place, RelatedNode):
                r_start, r_end = positions.range(place.node)
                related.append(RelatedLocation(path, r_start, r_end, place.message))
                # A suppression on any line of the merged places silences the finding.
                noqa_lines.update(range(r_start.line, r_end.line + 1))
            else:
                related.append(place)
        diagnostic = Diagnostic(
            code=rule.code,
            name=rule.name,
            message=report.message,
            path=path,
            start=start,
            end=end,
            severity=rule.severity,
            fix=fix,
            noqa_lines=tuple(sorted(noqa_lines)),
            related=tuple(related),
            project_dependent=report.project_dependent,
        )
        if report.fix is not None:
            fix_specs[len(diagnostics)] = report.fix
        diagnostics.append(diagnostic)
    diagnostics = _mark_scope(diagnostics, view, source, path, module_name, is_package)
    return _Analysis(module, reports, diagnostics, fix_specs, suppressions, ctx.parents)


def _mark_scope(
    diagnostics: list[Diagnostic],
    view: FileView,
    source: str,
    path: str,
    module_name: str | None,
    is_package: bool,
) -> list[Diagnostic]:
    """Each finding with why its code is outside the default scope (tpulint.analysis.scope),
    if it is. When the text checked is not the text the model was built from (a fix round),
    the file's own facts are read again from it."""
    current = None
    if view.module.scope.digest != text_digest(source):
        current = summarize(source, view.module.path, module_name, is_package)
    return [
        d.with_scope(
            view.scope_reason(
                d.start.line, d.start.column, current, family_of(d.code) in _PER_STEP_FAMILIES
            )
        )
        for d in diagnostics
    ]


# Families of rules about a cost paid every training step (their findings in inference code are
# outside the default scope); the others report what breaks on a TPU, also when it infers.
_PER_STEP_FAMILIES = frozenset({"host-sync", "dynamic-shapes", "data-pipeline", "opt-in"})


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file (as given, or once symlinks are resolved)."""
    import os

    if a == b:
        return True
    if a in ("-", "<stdin>") or b in ("-", "<stdin>"):
        return False
    return os.path.realpath(a) == os.path.realpath(b)


def _text_fix(spec: FixSpec, path: str) -> Fix:
    """A fix given as text edits: those of this file are its edits, those of other files its
    related edits (then it is a group: applied whole or not at all)."""
    own: list[Edit] = []
    related = []
    for file in spec.text_edits:
        if same_file(file.path, path):
            own.extend(file.edits)
        else:
            related.append(file)
    group = spec.group if related else ""
    return Fix(spec.applicability, spec.message, tuple(own), tuple(related), group)


def _is_text_fix(spec: FixSpec | None) -> bool:
    return spec is not None and bool(spec.text_edits)


def _finish(
    analysis: _Analysis, path: str, enabled: frozenset[str], source: str
) -> list[Diagnostic]:
    """Apply suppressions and add TPL001 (unused suppression) findings."""
    suppressions = analysis.suppressions
    kept = [d for d in analysis.diagnostics if not suppressions.suppresses(d)]
    if "TPL001" in enabled and not suppressions.empty:
        names = {name: rule.code for name, rule in infos_by_name().items()}
        known = frozenset(infos_by_code())
        for diagnostic in suppressions.unused(path, enabled, known, names):
            if not suppressions.suppresses(diagnostic):
                kept.append(diagnostic)
    kept.sort(key=lambda d: d.sort_key)
    return kept


# --- LightningCLI YAML configs ---------------------------------------------------------------


def _yaml_rules(enabled: frozenset[str]) -> list[type[Rule]]:
    return [rules_by_code()[r.code] for r in catalogue() if r.checks_yaml and r.code in enabled]


def _analyze_yaml(
    source: str,
    path: str,
    config: Config,
    enabled: frozenset[str],
    project: ProjectModel | None = None,
) -> _Analysis:
    """A LightningCLI config: yaml_config reads it and runs the rules that check configs."""
    file = read_yaml(source, path)
    if path not in ("-", "<stdin>") and file.error is None:
        # A Hydra Trainer group file inherits keys (`defaults: [default]`) from its group.
        read_hydra_bases(file, hydra_base_files(path, source))
    if project is not None and project.trainer_splats and file.error is None:
        # A section the code spreads into a Trainer (`pl.Trainer(**cfg.trainer)`) that asks
        # for TPUs holds a TPU Trainer's arguments.
        splats = list(project.trainer_splats)
        if spread_verdict(path, source, splats) == "tpu":
            file.splat = splat_section(path, source, splats)
    suppressions = parse_suppressions(source, comments=file.comments)
    try:
        diagnostics = check_yaml_file(file, config, _yaml_rules(enabled) if file.configs else [])
    except Exception as exc:  # a bug in a rule must not take the whole run down
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        raise InternalError(
            f"{type(exc).__name__}: {exc} (at {frame.filename.rsplit('/', 1)[-1]}:{frame.lineno})"
        ) from exc
    return _Analysis(None, [], diagnostics, {}, suppressions)


# --- shell launchers -------------------------------------------------------------------------


def _analyze_shell(source: str, path: str, config: Config, enabled: frozenset[str]) -> _Analysis:
    """A shell launcher (`train_tpu.sh`): the rules that check shell scripts (`check_shell`)
    read the environment it sets (analysis.shell_script)."""
    comments = shell_comments(source)
    suppressions = parse_suppressions(source, comments=comments)
    diagnostics: list[Diagnostic] = []
    by_code = rules_by_code()
    for code in sorted(enabled):
        rule_class = by_code.get(code)
        if rule_class is None or not getattr(rule_class, "checks_shell", False):
            continue
        rule = rule_class(None)  # type: ignore[arg-type]  # shell checks need no FileContext
        rule.yaml_config = config
        try:
            rule.check_shell(source)  # type: ignore[attr-defined]
        except Exception as exc:  # a bug in a rule must not take the whole run down
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            raise InternalError(
                f"{type(exc).__name__}: {exc} (at {frame.filename.rsplit('/', 1)[-1]}:"
                f"{frame.lineno})"
            ) from exc
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
                    noqa_lines=tuple(range(report.start.line, report.end.line + 1)),
                )
            )
    return _Analysis(None, [], diagnostics, {}, suppressions)


def fixable(diagnostics: Sequence[Diagnostic], unsafe: bool) -> list[Diagnostic]:
    """The diagnostics whose fix `fix` applies (safe ones, and unsafe ones with `unsafe`)."""
    return [d for d in diagnostics if d.fixable(unsafe) and d.fix is not None and d.fix.edits]


def add_noqa_comments(source: str, path: str, diagnostics: Sequence[Diagnostic]) -> tuple[str, int]:
    """`source` with `# noqa: CODE` comments for `diagnostics` (Python or a YAML config), and
    how many codes were added. Raises ValueError when the result would not parse."""
    if is_shell_path(path):
        return add_noqa(source, diagnostics, comments=shell_comments(source))
    if is_yaml_path(path):
        file = read_yaml(source, path)
        new, added = add_noqa(
            source, diagnostics, comments=file.comments, blocked=file.comment_blocked_lines
        )
        if added and file.error is None and read_yaml(new, path).error is not None:
            raise ValueError("adding comments would break the file")
        return new, added
    new, added = add_noqa(source, diagnostics)
    if added and new != source:
        shim = roundtrip.prepare(new)
        try:
            call_deep(cst.parse_module, shim.text if shim is not None else new)
        except TooDeep:
            raise ValueError("the file is nested too deeply to verify the result") from None
        except Exception:
            raise ValueError("adding comments would break the file") from None
    return new, added


def check_source(
    source: str,
    path: str = "<stdin>",
    config: Config | None = None,
    *,
    project: ProjectModel | None = None,
    with_edits: bool = True,
) -> list[Diagnostic]:
    """Diagnostics for one file's source.

    `path` is used for messages, per-file ignores and module resolution (relative imports);
    `project` is the project model of the run (tpulint.analysis.project); without one the
    file is modelled alone.
    Raises InternalError if a rule fails.
    """
    config = config or Config()
    try:
        return call_deep(_check_source, source, path, config, project, with_edits)
    except (TooDeep, MemoryError) as exc:
        return [unanalysable_diagnostic(path, _too_deep_reason(exc))]


def _too_deep_reason(exc: BaseException) -> str:
    if isinstance(exc, MemoryError):
        return "memory ran out while analysing this file"
    return f"an expression is {exc}"


def _check_source(
    source: str,
    path: str,
    config: Config,
    project: ProjectModel | None,
    with_edits: bool,
) -> list[Diagnostic]:
    enabled = config.enabled_for(_relpath(path, config))
    if is_yaml_path(path):
        return _finish(_analyze_yaml(source, path, config, enabled, project), path, enabled, source)
    if is_shell_path(path):
        return _finish(_analyze_shell(source, path, config, enabled), path, enabled, source)
    shim = roundtrip.prepare(source)
    if shim is not None:
        found = _check_python(shim.text, path, config, project, enabled, with_edits)
        return roundtrip.shift(shim, found)
    return _check_python(source, path, config, project, enabled, with_edits)


def _check_python(
    source: str,
    path: str,
    config: Config,
    project: ProjectModel | None,
    enabled: frozenset[str],
    with_edits: bool,
    module: cst.Module | None = None,
) -> list[Diagnostic]:
    analysis = _analyze(source, path, config, project, enabled, with_edits, module)
    return _finish(analysis, path, enabled, source)


def apply_text_edits(
    source: str, diagnostics: Sequence[Diagnostic]
) -> tuple[str, list[Diagnostic]]:
    """Apply the text edits of `diagnostics`' fixes; a fix whose edits overlap an edit already
    taken is skipped (left for the next round). Returns (new source, applied diagnostics)."""
    lines = roundtrip.physical_lines(source)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(location: Location) -> int:
        # starts has one entry per line plus one for the end of the text, so an edit may end
        # on the line after the last one (the end of a file that ends with a newline).
        line = min(location.line, len(starts))
        return min(starts[line - 1] + location.column - 1, len(source))

    taken: list[tuple[int, int]] = []
    applied: list[Diagnostic] = []
    spans: list[tuple[int, int, str]] = []
    for diagnostic in diagnostics:
        if diagnostic.fix is None or not diagnostic.fix.edits:
            continue
        ranges = [(offset(e.start), offset(e.end), e.content) for e in diagnostic.fix.edits]
        if any(
            (begin < t_end and t_begin < end) or begin == end == t_begin == t_end
            for begin, end, _ in ranges
            for t_begin, t_end in taken
        ):
            continue
        taken += [(b, e) for b, e, _ in ranges]
        spans += ranges
        applied.append(diagnostic)
    text = source
    for begin, end, content in sorted(spans, key=lambda s: (s[0], s[1]), reverse=True):
        text = text[:begin] + content + text[end:]
    return text, applied


def fix_source(
    source: str,
    path: str = "<stdin>",
    config: Config | None = None,
    *,
    unsafe: bool = False,
    project: ProjectModel | None = None,
    extra_edits: Sequence[Edit] = (),
) -> FixResult:
    """Apply every safe fix (and unsafe ones with `unsafe=True`) until none is left.

    Fixes are applied in one transform per round, rounds repeat until nothing changes (at
    most MAX_FIX_ITERATIONS), and the result must parse: otherwise the original source is
    returned with `error` set and nothing should be written.

    `extra_edits` are this file's edits of fixes that also edit other files (Fix.related),
    chosen by the caller for the whole project (the runner): they are applied to `source`
    first, then the file's own fixes.
    """
    config = config or Config()
    try:
        return call_deep(_fix_source, source, path, config, unsafe, project, tuple(extra_edits))
    except (TooDeep, MemoryError) as exc:
        return FixResult(source, [], [unanalysable_diagnostic(path, _too_deep_reason(exc))])


def _fix_source(
    source: str,
    path: str,
    config: Config,
    unsafe: bool,
    project: ProjectModel | None,
    extra_edits: tuple[Edit, ...] = (),
) -> FixResult:
    enabled = config.enabled_for(_relpath(path, config))
    if extra_edits:
        edited, problem = _with_extra_edits(source, extra_edits)
        if problem is not None:
            return FixResult(
                source, [], _check_source(source, path, config, project, True), error=problem
            )
        result = _fix_source(edited, path, config, unsafe, project)
        if result.error is not None:
            return result
        result.rewritten = True
        return result
    if is_yaml_path(path):
        return _fix_text_edits(source, path, config, unsafe, project)
    if is_shell_path(path):  # shell findings have no fixes
        return FixResult(source, [], check_source(source, path, config, project=project))
    shim = roundtrip.prepare(source)
    if shim is None:
        return _fix_python(source, path, config, unsafe, project, enabled)
    # Fixed in the text libcst reproduces, then given back what it would have lost.
    result = _fix_python(shim.text, path, config, unsafe, project, enabled)
    if not result.changed:
        remaining = _check_source(source, path, config, project, True)
        return FixResult(source, [], remaining, result.error)
    restored = roundtrip.restore(shim, result.source)
    remaining = _check_source(restored, path, config, project, True)
    if any(d.code in ("TPL002", "TPL004") for d in remaining):
        return FixResult(
            source,
            [],
            _check_source(source, path, config, project, True),
            error="the fixed code does not parse once its form feeds are restored; "
            "file left unchanged",
        )
    return FixResult(restored, roundtrip.shift(shim, result.fixed), remaining)


def _fix_python(
    source: str,
    path: str,
    config: Config,
    unsafe: bool,
    project: ProjectModel | None,
    enabled: frozenset[str],
) -> FixResult:
    current = source
    fixed: list[Diagnostic] = []
    # Code fixes to a fixed point, then stale suppressions (TPL001, text edits); removing a
    # suppression can make a code fix safe (one that keeps no comment inside the code it
    # rewrites), so the code fixes run again until a round changes nothing.
    for _ in range(MAX_FIX_ITERATIONS):
        outcome = _fix_code(current, source, path, config, unsafe, project, enabled)
        if isinstance(outcome, FixResult):
            return outcome  # refused: the fixed code does not parse, or no exact round trip
        current, round_fixed, last = outcome
        fixed += round_fixed
        remaining = _check_python(current, path, config, project, enabled, True, last)
        last = None
        edited = current
        for _ in range(MAX_FIX_ITERATIONS):
            # Several directives in one comment have overlapping edits: one per round.
            stale = [d for d in remaining if d.code == "TPL001" and d.fix is not None]
            if not stale:
                break
            candidate, applied = apply_text_edits(edited, stale)
            if candidate == edited:
                break
            try:
                cst.parse_module(candidate)
            except (RecursionError, MemoryError):
                raise
            except Exception:
                break
            fixed += applied
            edited = candidate
            remaining = _check_python(edited, path, config, project, enabled, True)
        if edited == current:
            break
        current = edited
    return FixResult(current, fixed, remaining)


def _fix_code(
    current: str,
    source: str,
    path: str,
    config: Config,
    unsafe: bool,
    project: ProjectModel | None,
    enabled: frozenset[str],
) -> tuple[str, list[Diagnostic], cst.Module | None] | FixResult:
    """Code fixes applied in rounds until none applies: (text, fixed, the text's tree if
    it is at hand), or a FixResult when the result must not be written."""
    allowed = {Applicability.SAFE} | ({Applicability.UNSAFE} if unsafe else set())
    fixed: list[Diagnostic] = []
    # Each round's tree is released before the next text is parsed, and a text parsed to
    # check the fixed code is the tree the next round analyses: one tree alive at a time.
    module: cst.Module | None = None
    analysis: _Analysis | None = None
    for round_number in range(MAX_FIX_ITERATIONS):
        analysis = _analyze(current, path, config, project, enabled, False, module)
        module = None
        if analysis.module is None:
            break
        suppressions = analysis.suppressions
        # Fixes given as text edits that touch only this file go first, in a round of their
        # own (their positions are those of the text analysed); those that also edit other
        # files are the runner's (it applies them whole, with `extra_edits`).
        texts = [
            d
            for index, d in enumerate(analysis.diagnostics)
            if _is_text_fix(analysis.fix_specs.get(index))
            and d.fix is not None
            and not d.fix.related
            and d.fix.applicability in allowed
            and config.shows(d)
            and not suppressions.suppresses(d)
        ]
        if texts:
            candidate, applied = apply_text_edits(current, texts)
            if applied and candidate != current:
                analysis = None
                try:
                    module = cst.parse_module(candidate)
                except (RecursionError, MemoryError):
                    raise
                except Exception as exc:
                    return FixResult(
                        source,
                        [],
                        _check_python(source, path, config, project, enabled, True),
                        error=f"the fixed code does not parse ({type(exc).__name__}); file left"
                        " unchanged",
                    )
                fixed.extend(applied)
                current = candidate
                continue
        chosen: list[FixSpec] = []
        chosen_nodes: set[int] = set()
        round_fixed: list[Diagnostic] = []
        for index, diagnostic in enumerate(analysis.diagnostics):
            spec = analysis.fix_specs.get(index)
            if spec is None or spec.applicability not in allowed or _is_text_fix(spec):
                continue
            if not config.shows(diagnostic):
                continue  # not reported in the configured scope: not fixed either
            if suppressions.suppresses(diagnostic):
                continue
            replaced = {id(old) for old, _ in spec.replacements}
            if replaced & chosen_nodes or _overlaps(analysis, spec, chosen_nodes):
                continue  # overlapping with a fix already chosen: next round
            chosen.append(spec)
            chosen_nodes |= replaced
            round_fixed.append(diagnostic)
        if not chosen:
            break
        if round_number == 0 and analysis.module.code != current:
            # libcst would not write back the untouched parts exactly: never write it.
            return FixResult(
                source,
                [],
                _check_python(source, path, config, project, enabled, True),
                error="libcst does not reproduce this file exactly; file left unchanged",
            )
        new_source = apply_fixes(analysis.module, chosen).code
        analysis = None
        chosen = []
        if new_source == current:
            break
        try:
            module = cst.parse_module(new_source)
        except (RecursionError, MemoryError):
            raise
        except Exception as exc:
            return FixResult(
                source,
                [],
                _check_python(source, path, config, project, enabled, True),
                error=f"the fixed code does not parse ({type(exc).__name__}); file left unchanged",
            )
        fixed.extend(round_fixed)
        current = new_source
    last = analysis.module if analysis is not None else module
    return current, fixed, last


def _fix_text_edits(
    source: str, path: str, config: Config, unsafe: bool, project: ProjectModel | None
) -> FixResult:
    """Fixing a file whose fixes are text edits (YAML configs): apply the non-overlapping
    edits, re-check, repeat until nothing is left to apply."""
    current = source
    fixed: list[Diagnostic] = []
    remaining = check_source(current, path, config, project=project)
    for _ in range(MAX_FIX_ITERATIONS):
        chosen = fixable(remaining, unsafe)
        if not chosen:
            break
        edited, applied = apply_text_edits(current, chosen)
        if edited == current:
            break
        problem = read_yaml(edited, path).error
        if problem is not None:
            return FixResult(
                source,
                [],
                check_source(source, path, config, project=project),
                error=f"the fixed config is not valid YAML ({problem.message}); file left "
                "unchanged",
            )
        fixed.extend(applied)
        current = edited
        remaining = check_source(current, path, config, project=project)
    return FixResult(current, fixed, remaining)


def _with_extra_edits(source: str, edits: Sequence[Edit]) -> tuple[str, str | None]:
    """`source` with `edits` applied (the same edit given twice, as two fixes that both add
    `import torch`, once), or why they cannot be: they overlap, or the result does not
    parse."""
    if roundtrip.prepare(source) is not None:
        return source, "a fix spanning several files cannot edit a file with form feeds"
    unique = list(dict.fromkeys(edits))
    if _self_overlapping(source, unique):
        return source, "the edits of fixes spanning several files overlap; file left unchanged"
    offset = _offsets(source)
    edited = source
    for begin, end, content in sorted(
        ((offset(e.start), offset(e.end), e.content) for e in unique), reverse=True
    ):
        edited = edited[:begin] + content + edited[end:]
    try:
        cst.parse_module(edited)
    except (RecursionError, MemoryError):
        raise
    except Exception as exc:
        return source, f"the fixed code does not parse ({type(exc).__name__}); file left unchanged"
    return edited, None


def _offsets(source: str) -> Callable[[Location], int]:
    lines = roundtrip.physical_lines(source)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(location: Location) -> int:
        line = min(location.line, len(starts))
        return min(starts[line - 1] + location.column - 1, len(source))

    return offset


def _self_overlapping(source: str, edits: Sequence[Edit]) -> bool:
    offset = _offsets(source)
    spans = sorted((offset(e.start), offset(e.end)) for e in edits)
    return any(
        b < a_end or (b == a_end == a and b_end == b)
        for (a, a_end), (b, b_end) in itertools.pairwise(spans)
    )


def location_map(source: str, edits: Sequence[Edit]) -> Callable[[Location], Location | None]:
    """Where a position of `source` is once `edits` (non-overlapping) are applied; None for a
    position inside an edited span."""
    edits = list(dict.fromkeys(edits))
    offset = _offsets(source)
    spans = sorted(
        ((offset(e.start), offset(e.end), len(e.content)) for e in edits), key=lambda s: s[:2]
    )
    edited = source
    for begin, end, content in sorted(
        ((offset(e.start), offset(e.end), e.content) for e in edits), reverse=True
    ):
        edited = edited[:begin] + content + edited[end:]
    new_lines = roundtrip.physical_lines(edited)
    new_starts = [0]
    for line in new_lines:
        new_starts.append(new_starts[-1] + len(line))

    def where(location: Location) -> Location | None:
        import bisect

        old = offset(location)
        shift = 0
        for begin, end, length in spans:
            if end <= old and not (begin == end == old):
                shift += length - (end - begin)
            elif begin < old < end:
                return None
        new = old + shift
        index = max(0, bisect.bisect_right(new_starts, new) - 1)
        return Location(index + 1, new - new_starts[index] + 1)

    return where


def fix_subset(
    source: str,
    path: str,
    config: Config,
    accept: Callable[[Diagnostic], bool],
    *,
    project: ProjectModel | None = None,
    extra_edits: Sequence[Edit] = (),
) -> FixResult:
    """One round of the fixes whose findings `accept` takes (positions and messages are those
    of `source`), then safe fixes to a fixed point. `tpulint fix --prove` uses it to apply a
    chosen subset of the unsafe rewrites; a rewrite that overlaps one already taken, or that
    only appears once others are applied, is left out (it is in `remaining`).

    Fixes given as text edits (Fix.related: they span files) are applied first: this file's
    edits of the accepted ones, and `extra_edits` (this file's edits of accepted fixes of
    findings in other files); the other fixes are then chosen on the edited text, by where
    their findings were in `source`."""
    enabled = config.enabled_for(_relpath(path, config))
    analysis = _analyze(source, path, config, project, enabled, with_edits=True)
    if analysis.module is None and not extra_edits:
        return FixResult(source, [], _finish(analysis, path, enabled, source))
    text_taken = [
        d
        for index, d in enumerate(analysis.diagnostics)
        if _is_text_fix(analysis.fix_specs.get(index))
        and d.fix is not None
        and d.fix.applicability is not Applicability.DISPLAY_ONLY
        and not analysis.suppressions.suppresses(d)
        and accept(d)
    ]
    edits: list[Edit] = list(extra_edits)
    for diagnostic in text_taken:
        assert diagnostic.fix is not None
        if not set(diagnostic.fix.edits) <= set(edits):
            edits.extend(e for e in diagnostic.fix.edits if e not in edits)
    if edits:
        edited, problem = _with_extra_edits(source, edits)
        if problem is not None:
            return FixResult(
                source, [], check_source(source, path, config, project=project), error=problem
            )
        where = location_map(source, edits)
        wanted = set()
        for index, d in enumerate(analysis.diagnostics):
            if _is_text_fix(analysis.fix_specs.get(index)) or not accept(d):
                continue
            start, end = where(d.start), where(d.end)
            if start is not None and end is not None:
                wanted.add((d.code, start, end, d.message))
        result = fix_subset(
            edited,
            path,
            config,
            lambda d: (d.code, d.start, d.end, d.message) in wanted,
            project=project,
        )
        return FixResult(
            result.source, text_taken + result.fixed, result.remaining, result.error, True
        )
    if analysis.module is None:
        return FixResult(source, [], _finish(analysis, path, enabled, source))
    chosen: list[FixSpec] = []
    chosen_nodes: set[int] = set()
    taken: list[Diagnostic] = []
    for index, diagnostic in enumerate(analysis.diagnostics):
        spec = analysis.fix_specs.get(index)
        if spec is None or spec.applicability is Applicability.DISPLAY_ONLY:
            continue
        if _is_text_fix(spec):
            continue
        if analysis.suppressions.suppresses(diagnostic) or not accept(diagnostic):
            continue
        replaced = {id(old) for old, _ in spec.replacements}
        if replaced & chosen_nodes or _overlaps(analysis, spec, chosen_nodes):
            if replaced <= chosen_nodes and any(
                spec.replacements == c.replacements for c in chosen
            ):
                taken.append(diagnostic)  # the same rewrite as one taken (a shared loss)
            continue
        chosen.append(spec)
        chosen_nodes |= replaced
        taken.append(diagnostic)
    current = apply_fixes(analysis.module, chosen).code if chosen else source
    try:
        cst.parse_module(current)
    except Exception as exc:
        return FixResult(
            source,
            [],
            check_source(source, path, config, project=project),
            error=f"the fixed code does not parse ({type(exc).__name__}); file left unchanged",
        )
    rest = fix_source(current, path, config, unsafe=False, project=project)
    if rest.error:
        return FixResult(current, taken, rest.remaining, error=rest.error)
    return FixResult(rest.source, taken + rest.fixed, rest.remaining)


def _overlaps(analysis: _Analysis, spec: FixSpec, chosen: set[int]) -> bool:
    """Whether a node `spec` replaces is inside, or contains, a node already chosen: the
    transform does not descend into replaced nodes, so only one of them can apply per round."""
    if not chosen:
        return False
    from tpulint.analysis.walker import iter_children

    parents = analysis.parents
    for old, _ in spec.replacements:
        ancestor = parents.get(id(old))
        while ancestor is not None:
            if id(ancestor) in chosen:
                return True
            ancestor = parents.get(id(ancestor))
        stack = list(iter_children(old))
        while stack:
            node = stack.pop()
            if id(node) in chosen:
                return True
            stack.extend(iter_children(node))
    return False
