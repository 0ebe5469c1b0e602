"""`tpulint server`: a language server on stdio, built on pygls.

It checks open Python files and LightningCLI YAML configs with the same engine and the same
configuration as `tpulint check` (the nearest pyproject.toml with `[tool.tpulint]`, the
project's model, its excludes), and gives editors:

- diagnostics when a document is opened, changed (after a short pause in typing) and saved;
- code actions: each finding's fix (safe ones preferred, unsafe ones marked), "add noqa" for
  the line, and `source.fixAll.tpulint` (every safe fix, as `tpulint fix --apply`);
- hover: the rule's page (`tpulint explain`) over a finding or over a code in a comment.

Positions are converted between tpulint's (1-based lines, columns in characters) and the
client's (0-based, UTF-16 code units unless the client negotiated another encoding).
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import ServerTextPosition

from tpulint import __version__
from tpulint.analysis.yaml_config import is_yaml_path
from tpulint.config.settings import Config, ConfigError, find_pyproject, load_config
from tpulint.datatypes.diagnostics import Applicability, Diagnostic, FileEdits, Location, Severity

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tpulint.analysis.project import ProjectModel

LOG = logging.getLogger("tpulint.server")
SOURCE = "tpulint"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.tpulint"
# Seconds without a change before a changed document is checked again.
DEBOUNCE = 0.25
CODE_RE = re.compile(r"\bTP[UL]\d{3}\b")
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}
# Findings that a noqa comment cannot or should not silence.
_NO_NOQA = {"TPL001", "TPL002", "TPL003"}


@dataclass
class Checked:
    """The findings for one version of a document."""

    version: int | None
    source: str
    diagnostics: list[Diagnostic]
    path: str
    config: Config | None


class TpulintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("tpulint", __version__)
        self.results: dict[str, Checked] = {}
        self.pending: dict[str, int | None] = {}
        # One worker: checks run in order, off the event loop, never two at once.
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tpulint-check")
        self._lock = threading.Lock()
        self._configs: dict[Path | None, tuple[int, Config]] = {}
        self._models: dict[Path, ProjectModel | None] = {}
        self._shown_errors: set[str] = set()

    # --- configuration and project, as `tpulint check` finds them ----------------------

    def config_for(self, path: str | None) -> Config:
        """The configuration `tpulint check PATH` would use. Raises ConfigError."""
        start = Path(path).parent if path else self._workspace_root()
        found = find_pyproject(start) if start is not None else None
        stamp = found.stat().st_mtime_ns if found is not None else 0
        with self._lock:
            cached = self._configs.get(found)
            if cached is not None and cached[0] == stamp:
                return cached[1]
        config = load_config(start=start)
        config.enabled  # noqa: B018 - resolve the selection now, so errors surface here
        with self._lock:
            self._configs[found] = (stamp, config)
        return config

    def _workspace_root(self) -> Path | None:
        try:
            root = self.workspace.root_path
        except (AttributeError, RuntimeError):  # before `initialize`
            return None
        return Path(root) if root else None

    def model_for(self, config: Config) -> ProjectModel | None:
        """The project model of the project the file belongs to, as saved on disk (only for
        a project with its own pyproject.toml, or the workspace folder: never a whole home
        folder)."""
        root = config.root if config.source is not None else self._workspace_root()
        if root is None:
            return None
        with self._lock:
            known = root in self._models
            model = self._models.get(root)
        if not known:
            from tpulint.runner.paths import project_model

            try:
                model = project_model([str(root)], config)
            except Exception as exc:  # a project that cannot be modelled still gets checked
                LOG.warning("tpulint: project scan of %s failed: %s", root, exc)
                model = None
            with self._lock:
                self._models[root] = model
        return model

    def project_for(self, path: str, source: str, config: Config) -> ProjectModel | None:
        """The project model with the editor's text of `path` in place of the saved file."""
        if is_yaml_path(path):
            return None
        model = self.model_for(config)
        if model is None:
            return None
        from tpulint.runner.project_build import with_source

        return with_source(model, path, source, config)

    def forget_models(self) -> None:
        with self._lock:
            self._models.clear()

    @staticmethod
    def excluded(path: str, config: Config) -> bool:
        """Whether `tpulint check --force-exclude PATH` would skip the file (as pre-commit)."""
        from tpulint.runner.discovery import PathError, discover

        if not Path(path).is_file():
            return False  # not saved yet: nothing to exclude it by
        try:
            found, _ = discover([path], config.with_cli(force_exclude=True))
        except PathError:
            return False
        return not found

    # --- checking --------------------------------------------------------------------

    def check(self, path: str | None, source: str) -> tuple[list[Diagnostic], Config | None]:
        """Run in the worker thread. Raises ConfigError."""
        from tpulint.engine.source import check_source

        name = path or "untitled.py"
        config = self.config_for(path)
        if path is not None and self.excluded(path, config):
            return [], config
        project = self.project_for(name, source, config)
        found = check_source(source, name, config, project=project)
        return [d for d in found if config.shows(d)], config

    async def check_and_publish(self, uri: str) -> None:
        document = self.workspace.get_text_document(uri)
        version, source, path = document.version, document.source, _path(document)
        if not _supported(path, document):
            return
        loop = asyncio.get_running_loop()
        try:
            diagnostics, config = await loop.run_in_executor(
                self.executor, self.check, path, source
            )
        except ConfigError as exc:
            self.show_error(f"tpulint: {exc}")
            diagnostics, config = [], None
        except Exception as exc:  # a rule's bug must not take the editor's server down
            self.show_error(f"tpulint: internal error checking {path or uri}: {exc}")
            diagnostics, config = [], None
        current = self.workspace.get_text_document(uri)
        if current.version != version or uri not in self.workspace.text_documents:
            return  # changed (or closed) meanwhile: a newer check will publish
        self.results[uri] = Checked(version, source, diagnostics, path or "untitled.py", config)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri,
                version=version,
                diagnostics=[to_lsp(current, d) for d in diagnostics],
            )
        )

    def current(self, document: TextDocument) -> Checked | None:
        """The findings for the document as it is now (checked on demand if needed)."""
        checked = self.results.get(document.uri)
        if checked is not None and checked.source == document.source:
            return checked
        path = _path(document)
        if not _supported(path, document):
            return None
        try:
            diagnostics, config = self.executor.submit(self.check, path, document.source).result()
        except Exception:
            return None
        checked = Checked(
            document.version, document.source, diagnostics, path or "untitled.py", config
        )
        self.results[document.uri] = checked
        return checked

    def show_error(self, message: str) -> None:
        LOG.error(message)
        if message in self._shown_errors:
            return
        self._shown_errors.add(message)
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Error, message=message)
        )


def _path(document: TextDocument) -> str | None:
    """The file behind a document (None for an unsaved `untitled:` buffer)."""
    return document.path if document.uri.startswith("file:") else None


def _supported(path: str | None, document: TextDocument) -> bool:
    if path is not None:
        return path.endswith((".py", ".pyi")) or is_yaml_path(path)
    return document.language_id in (None, "python", "yaml")


# --- positions and conversions -------------------------------------------------------------


def client_position(document: TextDocument, location: Location) -> types.Position:
    return document.position_to_client_units(
        ServerTextPosition(location.line - 1, location.column - 1)
    )


def client_range(document: TextDocument, start: Location, end: Location) -> types.Range:
    return types.Range(client_position(document, start), client_position(document, end))


def to_lsp(document: TextDocument, diagnostic: Diagnostic) -> types.Diagnostic:
    fix = diagnostic.fix
    fixable = fix is not None and fix.edits and fix.applicability is not Applicability.DISPLAY_ONLY
    return types.Diagnostic(
        range=client_range(document, diagnostic.start, diagnostic.end),
        message=diagnostic.message,
        severity=_SEVERITY[diagnostic.severity],
        code=diagnostic.code,
        source=SOURCE,
        tags=[types.DiagnosticTag.Unnecessary] if diagnostic.code == "TPL001" else None,
        data={"name": diagnostic.name, "fixable": bool(fixable)},
        related_information=[
            types.DiagnosticRelatedInformation(
                location=types.Location(
                    uri=_related_uri(document, diagnostic, place.path),
                    range=client_range(document, place.start, place.end)
                    if place.path == diagnostic.path
                    else types.Range(
                        types.Position(place.start.line - 1, place.start.column - 1),
                        types.Position(place.end.line - 1, place.end.column - 1),
                    ),
                ),
                message=place.message,
            )
            for place in diagnostic.related
        ]
        or None,
    )


def _related_uri(document: TextDocument, diagnostic: Diagnostic, path: str) -> str:
    """The URI of a related place: the document's own, or another file's."""
    if path == diagnostic.path:
        return document.uri
    return Path(path).resolve().as_uri()


def _contains(diagnostic: Diagnostic, line: int, column: int) -> bool:
    """Whether the 1-based (line, column) is inside the finding (its ends included)."""
    here = Location(line, column)
    return diagnostic.start <= here <= diagnostic.end


def _overlaps(diagnostic: Diagnostic, start: Location, end: Location) -> bool:
    return diagnostic.start <= end and start <= diagnostic.end


def _server_location(document: TextDocument, position: types.Position) -> Location:
    server = document.position_from_client_units(position)
    return Location(server.line + 1, server.character + 1)


def _workspace_edit(
    server: TpulintServer,
    document: TextDocument,
    edits: list[types.TextEdit],
    related: Sequence[FileEdits],
) -> types.WorkspaceEdit | None:
    """One edit of several documents (None when another file no longer holds the text the
    fix was computed on)."""
    import hashlib

    parts = [(document, edits)]
    for other in related:
        other_document = server.workspace.get_text_document(Path(other.path).as_uri())
        try:
            text = other_document.source
        except OSError:
            return None
        if hashlib.sha1(text.encode("utf-8")).hexdigest() != other.digest:
            return None
        parts.append(
            (
                other_document,
                [
                    types.TextEdit(
                        range=client_range(other_document, e.start, e.end), new_text=e.content
                    )
                    for e in other.edits
                ],
            )
        )
    capabilities = server.client_capabilities.workspace
    versioned = bool(
        capabilities
        and capabilities.workspace_edit
        and capabilities.workspace_edit.document_changes
    )
    if versioned:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=doc.uri, version=doc.version
                    ),
                    edits=doc_edits,
                )
                for doc, doc_edits in parts
            ]
        )
    return types.WorkspaceEdit(changes={doc.uri: doc_edits for doc, doc_edits in parts})


def _document_edit(
    server: TpulintServer, document: TextDocument, edits: list[types.TextEdit]
) -> types.WorkspaceEdit:
    capabilities = server.client_capabilities.workspace
    versioned = bool(
        capabilities
        and capabilities.workspace_edit
        and capabilities.workspace_edit.document_changes
    )
    if versioned:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=document.uri, version=document.version
                    ),
                    edits=edits,
                )
            ]
        )
    return types.WorkspaceEdit(changes={document.uri: edits})


def _whole_document(document: TextDocument, text: str) -> types.TextEdit:
    lines = document.lines
    if not lines or lines[-1].endswith(("\n", "\r")):
        end = types.Position(line=len(lines), character=0)
    else:
        end = document.position_to_client_units(ServerTextPosition(len(lines) - 1, len(lines[-1])))
    return types.TextEdit(range=types.Range(types.Position(0, 0), end), new_text=text)


def _changed_lines(document: TextDocument, old: str, new: str) -> list[types.TextEdit]:
    """The edit that turns `old` into `new` when only whole lines changed (add noqa)."""
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    first = 0
    while first < min(len(old_lines), len(new_lines)) and old_lines[first] == new_lines[first]:
        first += 1
    last_old, last_new = len(old_lines), len(new_lines)
    while (
        last_old > first and last_new > first and old_lines[last_old - 1] == new_lines[last_new - 1]
    ):
        last_old -= 1
        last_new -= 1
    return [
        types.TextEdit(
            range=types.Range(types.Position(first, 0), types.Position(last_old, 0)),
            new_text="".join(new_lines[first:last_new]),
        )
    ]


# --- the server's features -----------------------------------------------------------------


def build_server() -> TpulintServer:
    server = TpulintServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: TpulintServer, params: types.DidOpenTextDocumentParams) -> None:
        await ls.check_and_publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: TpulintServer, params: types.DidChangeTextDocumentParams) -> None:
        uri, version = params.text_document.uri, params.text_document.version
        ls.pending[uri] = version
        await asyncio.sleep(DEBOUNCE)
        if ls.pending.get(uri) == version:
            await ls.check_and_publish(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: TpulintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith((".py", "pyproject.toml")):
            # The project model (and the configuration) may have changed: check
            # every open document again.
            ls.forget_models()
            for open_uri in list(ls.workspace.text_documents):
                await ls.check_and_publish(open_uri)
        else:
            await ls.check_and_publish(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TpulintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.results.pop(uri, None)
        ls.pending.pop(uri, None)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL],
            resolve_provider=False,
        ),
    )
    def code_action(
        ls: TpulintServer, params: types.CodeActionParams
    ) -> list[types.CodeAction] | None:
        document = ls.workspace.get_text_document(params.text_document.uri)
        checked = ls.current(document)
        if checked is None:
            return None
        only = params.context.only
        actions: list[types.CodeAction] = []
        if not only or any(k.startswith(types.CodeActionKind.QuickFix) for k in only):
            start = _server_location(document, params.range.start)
            end = _server_location(document, params.range.end)
            for diagnostic in checked.diagnostics:
                if _overlaps(diagnostic, start, end):
                    actions += _quick_fixes(ls, document, checked, diagnostic)
        wants_fix_all = not only or any(
            FIX_ALL.startswith(k) or k.startswith(FIX_ALL) for k in only
        )
        if wants_fix_all:
            action = _fix_all(ls, document, checked)
            if action is not None:
                actions.append(action)
        return actions

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: TpulintServer, params: types.HoverParams) -> types.Hover | None:
        from tpulint.config.registry import find_rule
        from tpulint.docs import render_rule

        document = ls.workspace.get_text_document(params.text_document.uri)
        here = _server_location(document, params.position)
        codes: list[str] = []
        checked = ls.current(document)
        for diagnostic in checked.diagnostics if checked is not None else ():
            if _contains(diagnostic, here.line, here.column) and diagnostic.code not in codes:
                codes.append(diagnostic.code)
        # A code under the cursor, as in a suppression comment (noqa: TPU101).
        lines = document.lines
        line = lines[here.line - 1] if 0 < here.line <= len(lines) else ""
        for match in CODE_RE.finditer(line):
            if match.start() <= here.column - 1 <= match.end() and match.group() not in codes:
                codes.append(match.group())
        pages = [render_rule(rule) for code in codes if (rule := find_rule(code)) is not None]
        if not pages:
            return None
        return types.Hover(
            contents=types.MarkupContent(
                kind=types.MarkupKind.Markdown, value="\n---\n\n".join(pages)
            )
        )

    return server


def _quick_fixes(
    ls: TpulintServer, document: TextDocument, checked: Checked, diagnostic: Diagnostic
) -> list[types.CodeAction]:
    actions = []
    lsp_diagnostic = to_lsp(document, diagnostic)
    fix = diagnostic.fix
    if fix is not None and fix.edits and fix.applicability is not Applicability.DISPLAY_ONLY:
        safe = fix.applicability is Applicability.SAFE
        title = f"tpulint ({diagnostic.code}): {fix.message}"
        if not safe:
            title += " (unsafe fix: may change behaviour, review it)"
        edits = [
            types.TextEdit(range=client_range(document, e.start, e.end), new_text=e.content)
            for e in fix.edits
        ]
        edit: types.WorkspaceEdit | None = _document_edit(ls, document, edits)
        if fix.related:
            # The fix edits other files too: offered only as a whole, and only while those
            # files hold the text it was computed on.
            edit = _workspace_edit(ls, document, edits, fix.related)
            title += (
                f" (also edits {len(fix.related)} other file{'s' if len(fix.related) > 1 else ''})"
            )
        if edit is not None:
            actions.append(
                types.CodeAction(
                    title=title,
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[lsp_diagnostic],
                    edit=edit,
                    is_preferred=safe,
                )
            )
    if diagnostic.code not in _NO_NOQA:
        from tpulint.engine.source import add_noqa_comments

        try:
            new, added = add_noqa_comments(checked.source, checked.path, [diagnostic])
        except ValueError:
            added = 0
        if added and new != checked.source:
            actions.append(
                types.CodeAction(
                    title=f"tpulint ({diagnostic.code}): add `# noqa: {diagnostic.code}`",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[lsp_diagnostic],
                    edit=_document_edit(
                        ls, document, _changed_lines(document, checked.source, new)
                    ),
                )
            )
    return actions


def _fix_all(
    ls: TpulintServer, document: TextDocument, checked: Checked
) -> types.CodeAction | None:
    if checked.config is None or not any(d.fixable(False) for d in checked.diagnostics):
        return None
    from tpulint.engine.source import fix_source

    config = checked.config
    project = ls.project_for(checked.path, checked.source, config)
    result = fix_source(checked.source, checked.path, config, unsafe=False, project=project)
    if result.error is not None or result.source == checked.source:
        return None
    return types.CodeAction(
        title="tpulint: apply every safe fix",
        kind=FIX_ALL,
        edit=_document_edit(ls, document, [_whole_document(document, result.source)]),
    )


def serve() -> None:
    """Run the server on stdin/stdout until the client shuts it down."""
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    build_server().start_io()
