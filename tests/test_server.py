"""`tpulint server` end to end: a real LSP client (pytest-lsp) talks to `python -m tpulint
server` over stdio: initialize, open, change, diagnostics, code actions applied, hover, save,
close, shutdown."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.helpers import make_project

TIMEOUT = 60  # seconds for any one answer (the machine is shared)

MODULE = textwrap.dedent(
    """\
    import lightning as L


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.loss_fn(self(batch))
            self.log("train_loss", loss.item())
            self.task.log('total', loss.item())
            return loss
    """
)


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "tpulint", "server"]),
)
async def client(lsp_client: LanguageClient):
    yield
    await lsp_client.shutdown_session()


async def _initialize(client: LanguageClient, root: Path) -> types.InitializeResult:
    return await asyncio.wait_for(
        client.initialize_session(
            types.InitializeParams(
                capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
                root_uri=root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="project")],
            )
        ),
        TIMEOUT,
    )


async def _diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    await asyncio.wait_for(
        client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), TIMEOUT
    )
    return list(client.diagnostics.get(uri, []))


def _apply(text: str, edit: types.WorkspaceEdit, uri: str) -> str:
    """Apply a workspace edit to `text` as an editor does (edits from the end backwards)."""
    if edit.document_changes:
        edits = [e for change in edit.document_changes for e in change.edits]  # type: ignore[union-attr]
    else:
        edits = (edit.changes or {})[uri]
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: types.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        return starts[position.line] + position.character  # ASCII: UTF-16 units = characters

    for item in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character))[::-1]:
        text = text[: offset(item.range.start)] + item.new_text + text[offset(item.range.end) :]
    return text


def _change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def _actions(
    client: LanguageClient, uri: str, diagnostic: types.Diagnostic
) -> list[types.CodeAction]:
    result = await asyncio.wait_for(
        client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=diagnostic.range,
                context=types.CodeActionContext(diagnostics=[diagnostic]),
            )
        ),
        TIMEOUT,
    )
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


@pytest.mark.asyncio(loop_scope="function")
async def test_editor_session_end_to_end(client: LanguageClient, tmp_path: Path) -> None:
    root = make_project(tmp_path / "project", {"model.py": MODULE})
    uri = (root / "model.py").as_uri()

    # initialize: the server says what it does.
    result = await _initialize(client, root)
    capabilities = result.capabilities
    assert result.server_info is not None and result.server_info.name == "tpulint"
    assert capabilities.hover_provider
    assert isinstance(capabilities.code_action_provider, types.CodeActionOptions)
    assert "source.fixAll.tpulint" in (capabilities.code_action_provider.code_action_kinds or [])

    # open -> diagnostics from the same engine and config as `tpulint check`
    # (the project's pyproject.toml selects TPU001, TPU101, TPU102 and TPL).
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=MODULE
            )
        )
    )
    found = await _diagnostics(client, uri)
    assert [(d.code, d.range.start.line, d.range.start.character) for d in found] == [
        ("TPU102", 6, 31),
        ("TPU101", 7, 31),
    ]
    assert all(d.source == "tpulint" for d in found)
    assert found[0].severity == types.DiagnosticSeverity.Warning

    # change -> diagnostics again (a Lightning 1.x Trainer line added at the end).
    text = MODULE + "\n\ntrainer = L.Trainer(tpu_cores=8)\n"
    _change(client, uri, 2, text)
    found = await _diagnostics(client, uri)
    assert [d.code for d in found] == ["TPU102", "TPU101", "TPU001"]
    assert found[2].severity == types.DiagnosticSeverity.Error

    # code action: the safe fix of TPU102, applied as an editor applies it.
    actions = await _actions(client, uri, found[0])
    fix = next(a for a in actions if "TPU102" in a.title and "noqa" not in a.title)
    assert fix.is_preferred and "unsafe" not in fix.title
    assert fix.kind == types.CodeActionKind.QuickFix and fix.edit is not None
    text = _apply(text, fix.edit, uri)
    assert 'self.log("train_loss", loss)' in text
    _change(client, uri, 3, text)
    found = await _diagnostics(client, uri)
    assert [d.code for d in found] == ["TPU101", "TPU001"]

    # code actions for TPU101 (`self.task.log('total', loss.item())`): its unsafe fix (`.detach()`,
    # marked as such), "add noqa"; the noqa one is applied.
    actions = await _actions(client, uri, found[0])
    titles = [a.title for a in actions]
    assert titles[0].startswith("tpulint (TPU101): Keep the value on the device: `.detach()`")
    assert titles[0].endswith("(unsafe fix: may change behaviour, review it)")
    assert titles[1:] == [
        "tpulint (TPU101): add `# noqa: TPU101`",
        "tpulint: apply every safe fix",  # offered with the quick fixes, as Ruff does
    ]
    assert actions[1].edit is not None
    text = _apply(text, actions[1].edit, uri)
    assert "self.task.log('total', loss.item())  # noqa: TPU101\n" in text
    _change(client, uri, 4, text)
    found = await _diagnostics(client, uri)
    assert [d.code for d in found] == ["TPU001"]

    # hover: the rule's page over a finding, and over a code in a noqa comment.
    hover = await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=found[0].range.start.line, character=25),
            )
        ),
        TIMEOUT,
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value.startswith("# TPU001: legacy-tpu-cores")
    assert "## Why is this bad on TPU?" in hover.contents.value
    noqa_line = text.splitlines().index(
        "        self.task.log('total', loss.item())  # noqa: TPU101"
    )
    hover = await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=noqa_line, character=58),
            )
        ),
        TIMEOUT,
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.value.startswith("# TPU101: item-in-hot-path")

    # source.fixAll: every safe fix at once, as `tpulint fix --apply`.
    result = await asyncio.wait_for(
        client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(types.Position(0, 0), types.Position(0, 0)),
                context=types.CodeActionContext(
                    diagnostics=[], only=[types.CodeActionKind.SourceFixAll]
                ),
            )
        ),
        TIMEOUT,
    )
    (fix_all,) = [a for a in result or [] if isinstance(a, types.CodeAction)]
    assert fix_all.kind == "source.fixAll.tpulint" and fix_all.edit is not None
    text = _apply(text, fix_all.edit, uri)
    assert 'L.Trainer(accelerator="tpu", devices=8)' in text

    # save (the file on disk now matches) -> checked again; close -> diagnostics cleared.
    (root / "model.py").write_text(text, encoding="utf-8")
    _change(client, uri, 5, text)
    assert await _diagnostics(client, uri) == []
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert await _diagnostics(client, uri) == []
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert await _diagnostics(client, uri) == []
    # shutdown and exit: the fixture's shutdown_session; the server must exit cleanly.


@pytest.mark.asyncio(loop_scope="function")
async def test_yaml_config_unsafe_fix_is_marked(client: LanguageClient, tmp_path: Path) -> None:
    config = "trainer: {accelerator: tpu, precision: 16, max_epochs: 3}  # from 1.x\n"
    root = make_project(
        tmp_path / "project", {"config.yaml": config}, pyproject='select = ["TPU"]\n'
    )
    uri = (root / "config.yaml").as_uri()
    await _initialize(client, root)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="yaml", version=1, text=config
            )
        )
    )
    found = await _diagnostics(client, uri)
    assert [(d.code, d.range.start.character) for d in found] == [("TPU004", 39)]
    actions = await _actions(client, uri, found[0])
    fix = next(a for a in actions if "noqa" not in a.title)
    assert "unsafe" in fix.title and not fix.is_preferred
    assert fix.edit is not None
    assert _apply(config, fix.edit, uri) == config.replace("precision: 16", "precision: bf16-true")
    noqa = next(a for a in actions if "noqa" in a.title)
    assert noqa.edit is not None
    assert _apply(config, noqa.edit, uri).endswith("# from 1.x  # noqa: TPU004\n")


@pytest.mark.asyncio(loop_scope="function")
async def test_configuration_error_is_shown_not_crashed(
    client: LanguageClient, tmp_path: Path
) -> None:
    root = make_project(tmp_path / "project", {"model.py": MODULE}, pyproject='select = ["TPX"]\n')
    uri = (root / "model.py").as_uri()
    await _initialize(client, root)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=MODULE
            )
        )
    )
    # The message is sent before the (empty) diagnostics.
    assert await _diagnostics(client, uri) == []
    (message,) = client.messages
    assert message.type == types.MessageType.Error
    assert "unknown rule selector `TPX`" in message.message


def test_cli_starts_without_the_server_dependencies() -> None:
    code = (
        "import sys, tpulint.cli\n"
        "assert 'pygls' not in sys.modules and 'lsprotocol' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_server_without_pygls_is_one_line_error() -> None:
    # A missing pygls (tpulint installed without the `server` extra) is simulated by
    # blocking the import.
    code = (
        "import sys; sys.modules['pygls'] = None; sys.argv = ['tpulint', 'server']; "
        "from tpulint.cli import main; main()"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("tpulint: error: `tpulint server` needs pygls and lsprotocol")
    assert result.stderr.rstrip().endswith("pip install 'tpulint[server]'")
    assert result.stderr.count("\n") == 1
