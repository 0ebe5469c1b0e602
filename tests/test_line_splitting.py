"""Lines as Python's tokenizer has them: only \\n, \\r\\n and \\r end a line. Form feeds, U+2028
and the other separators `str.splitlines` knows stay inside their line, for suppressions,
`--add-noqa`, positions and fixes; form feeds in indentation (valid Python) are analysed and
kept."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

import pytest

from tests.helpers import make_project, run_subprocess
from tpulint.analysis.suppression import NoqaError, add_noqa, parse_suppressions
from tpulint.config.settings import Config
from tpulint.datatypes.roundtrip import physical_lines
from tpulint.engine.source import check_source, fix_source

# TPU006 (preview, with a safe fix) is the rule these sources are written around.
CONFIG = Config.from_mapping({"select": ["TPU", "TPL001"], "preview": True})
HEAD = (
    "import lightning as L\n\n\nclass Model(L.LightningModule):\n"
    "    def training_step(self, batch, batch_idx):\n"
)


def _where(source: str) -> list[tuple[int, int, str]]:
    return [(d.start.line, d.start.column, d.code) for d in check_source(source, "m.py", CONFIG)]


def _tokenizer_lines(source: str) -> int:
    return max(t.end[0] for t in tokenize.generate_tokens(io.StringIO(source).readline))


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x0c", "\x1c", "\x85", "\x0b"])
def test_physical_lines_match_the_tokenizer(separator: str) -> None:
    source = f"x = 'a{separator}b'  # note{separator}more\ny = 2\r\nz = 3\rw = 4\n"
    assert len(physical_lines(source)) == 4
    assert "".join(physical_lines(source)) == source


def test_a_separator_in_a_string_does_not_shift_findings_or_suppressions() -> None:
    source = HEAD + (
        "        label = 'a\u2028b\x0cc'\n"
        "        value = batch.sum().item()  # noqa: TPU101\n"
        "        return batch.sum().item()\n"
    )
    assert _where(source) == [(8, 16, "TPU101")]
    assert 7 in parse_suppressions(source).by_line


def test_carriage_return_line_endings() -> None:
    source = (HEAD + "        x = batch.cuda()  # noqa: TPU006\n        return x.item()\n").replace(
        "\n", "\r"
    )
    assert _where(source) == [(7, 16, "TPU101")]
    fixed = fix_source(source.replace("  # noqa: TPU006", ""), "m.py", CONFIG)
    assert fixed.source.endswith("return x.item()\r")
    assert fixed.source.count("\r") == source.count("\r") and "\n" not in fixed.source


def test_add_noqa_with_separators_strings_and_continuations(tmp_path: Path) -> None:
    module = HEAD + (
        "        note = 'ends\u2028here' + str(batch.sum().item())\n"
        "        text = '''spans\n"
        "lines''' + str(batch.sum().item())\n"
        "        total = batch.sum() \\\n"
        "            .item()\n"
        "\x0c        return batch.mean().item()\n"
    )
    root = make_project(tmp_path / "p", {"m.py": module}, pyproject='select = ["TPU101"]\n')
    (root / "m.py").write_bytes(module.encode())
    result = run_subprocess(["check", "--add-noqa", "--no-cache", "."], root)
    assert result.exit_code == 0, result.stderr
    assert "Added 4 noqa comments." in result.stderr
    text = (root / "m.py").read_bytes().decode()
    assert "        note = 'ends\u2028here' + str(batch.sum().item())  # noqa: TPU101\n" in text
    assert "lines''' + str(batch.sum().item())  # noqa: TPU101\n" in text
    assert "        total = batch.sum() \\\n            .item()  # noqa: TPU101\n" in text
    assert "\x0c        return batch.mean().item()  # noqa: TPU101\n" in text
    assert _tokenizer_lines(text) == _tokenizer_lines(module)
    again = run_subprocess(["check", "--no-cache", "."], root)
    assert again.exit_code == 0, again.stdout


def test_add_noqa_writes_nothing_if_the_code_would_change(monkeypatch) -> None:
    """The token check behind `--add-noqa`: a result whose code differs is refused (here a
    broken line insertion is forged; the real insertion avoids these cases)."""
    from tpulint.analysis import suppression

    monkeypatch.setattr(suppression, "_add_noqa", lambda *args: ("x = 2  # noqa\n", 1))
    with pytest.raises(NoqaError, match="would change the code"):
        add_noqa("x = 1\n", [object()])  # type: ignore[list-item]
    monkeypatch.setattr(suppression, "_add_noqa", lambda *args: ("x = 1  # noqa\n", 1))
    assert add_noqa("x = 1\n", [object()]) == ("x = 1  # noqa\n", 1)  # type: ignore[list-item]


def test_a_form_feed_before_an_indented_statement_is_valid_python(tmp_path: Path) -> None:
    source = HEAD + "\x0c        x = batch.cuda()\n        return x.item()\n"
    compile(source, "m.py", "exec")
    assert _where(source) == [(6, 14, "TPU006"), (7, 16, "TPU101")]
    root = make_project(
        tmp_path / "p", {}, pyproject='select = ["TPU006", "TPU101"]\npreview = true\n'
    )
    (root / "m.py").write_bytes(source.encode())
    checked = run_subprocess(["check", "--no-cache", "m.py"], root)
    assert "TPL002" not in checked.stdout
    assert "m.py:6:14: TPU006 [*]" in checked.stdout
    fixed = run_subprocess(["fix", "--apply", "--no-cache", "m.py"], root)
    assert fixed.exit_code == 1, fixed.stderr  # TPU101 remains
    assert (root / "m.py").read_bytes().decode() == source.replace(
        "batch.cuda()", "batch.to(self.device)"
    )


def test_form_feeds_on_untouched_lines_are_kept_by_fixes() -> None:
    source = (
        "\x0cimport lightning as L\n\x0c\n\n"
        "class Model(L.LightningModule):\n"
        "    def training_step(self, batch, batch_idx):\n"
        "        y = 1\n"
        "  \x0c        x = batch.cuda()\n"
        "\x0c        self.log('loss', batch.sum().item())\n"
        "        s = '''\n\x0c   text'''\n"
        "        return x\n"
    )
    compile(source, "m.py", "exec")
    result = fix_source(source, "m.py", CONFIG)
    assert result.error is None
    assert result.source == source.replace("batch.cuda()", "batch.to(self.device)").replace(
        "batch.sum().item()", "batch.sum()"
    )
    assert check_source(result.source, "m.py", CONFIG) == []
