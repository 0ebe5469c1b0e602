"""Suppression comments, unused-suppression reporting (TPL001) and --add-noqa."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.helpers import UNREADY_MODULE, make_project, run_cli
from tpulint.config.settings import Config
from tpulint.engine.source import check_source, fix_source

HEAD = (
    "import lightning as L\n\n\nclass Model(L.LightningModule):\n"
    "    def training_step(self, batch, batch_idx):\n"
)
CONFIG = Config.from_mapping({"select": ["TPU", "TPL001"]})


def codes(source: str, config: Config = CONFIG) -> list[tuple[int, str]]:
    return [(d.start.line, d.code) for d in check_source(source, "m.py", config)]


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa",
        "# noqa: TPU101",
        "#noqa:TPU101",
        "# NOQA:TPU101",
        "# noqa: E501,TPU101",
        "# tpulint: ignore[TPU101]",
        "# tpulint: ignore[item-in-hot-path]",
        "# tpulint: ignore",
        "# some note  # noqa: TPU101",
    ],
)
def test_line_suppressions(comment: str) -> None:
    source = HEAD + f"        return batch.sum().item()  {comment}\n"
    assert codes(source) == []


def test_suppression_only_silences_named_codes() -> None:
    source = HEAD + "        return batch.sum().item()  # noqa: TPU102\n"
    found = codes(source)
    assert (6, "TPU101") in found
    assert (6, "TPL001") in found  # and the TPU102 code is reported as unused


def test_suppression_on_any_line_of_a_multiline_node() -> None:
    source = HEAD + (
        "        self.seen += (\n"
        "            batch.sum()\n"
        "            .item()\n"
        "        )  # noqa: TPU101\n"
        "        return batch\n"
    )
    assert [c for c in codes(source) if c[1] == "TPU101"] == [(7, "TPU101")]
    source = HEAD + (
        "        self.seen += batch.sum(\n        ).item()  # noqa: TPU101\n        return batch\n"
    )
    assert codes(source) == []


def test_noqa_inside_a_string_is_not_a_comment() -> None:
    source = HEAD + '        print("# noqa"); return batch.sum().item()\n'
    assert (6, "TPU101") in codes(source)


def test_file_level_suppression() -> None:
    assert codes("# tpulint: noqa\n" + HEAD + "        return batch.sum().item()\n") == []
    partial = (
        "# tpulint: noqa: TPU102\n"
        + HEAD
        + "        self.log('x', batch.sum().item())\n        return batch.sum().item()\n"
    )
    assert codes(partial) == [(8, "TPU101")]


def test_unused_suppressions() -> None:
    source = textwrap.dedent(
        """\
        x = 1  # noqa
        y = 2  # noqa: E501
        z = 3  # noqa: TPU101
        w = 4  # tpulint: ignore[TPU202, TPU999]
        """
    )
    found = check_source(source, "m.py", CONFIG)
    assert [(d.start.line, d.code) for d in found] == [(3, "TPL001"), (4, "TPL001")]
    assert "`TPU101`" in found[0].message
    assert "`TPU202`, `TPU999`" in found[1].message
    fixed = fix_source(source, "m.py", CONFIG)
    assert fixed.source == "x = 1  # noqa\ny = 2  # noqa: E501\nz = 3\nw = 4\n"
    assert fixed.remaining == []


def test_unused_suppression_of_a_disabled_rule_is_not_reported() -> None:
    config = Config.from_mapping({"select": ["TPU", "TPL001"], "ignore": ["TPU101"]})
    assert codes("x = 1  # noqa: TPU101\n", config) == []


def test_suppressed_findings_are_not_fixed() -> None:
    source = (
        HEAD + "        self.log('x', batch.sum().item())  # noqa: TPU102\n        return batch\n"
    )
    assert fix_source(source, "m.py", CONFIG).source == source


def test_add_noqa(tmp_path: Path) -> None:
    module = UNREADY_MODULE + textwrap.dedent(
        '''\

        class Other(L.LightningModule):
            def training_step(self, batch, batch_idx):
                doc = """text
        """ + str(batch.sum().item())
                self.total += batch.sum(
                ).item()  # existing note
                return batch.sum().item()  # noqa: E501
        '''
    )
    root = make_project(tmp_path / "p", {"m.py": module})
    result = run_cli(["check", ".", "--add-noqa"], root)
    assert result.exit_code == 0
    assert "Added 5 noqa comments." in result.stderr
    text = (root / "m.py").read_text()
    assert 'self.log("train_loss", loss.item())  # noqa: TPU102\n' in text
    assert "self.task.log('total', loss.item())  # noqa: TPU101\n" in text
    # not inside the multi-line string: after it
    assert '""" + str(batch.sum().item())  # noqa: TPU101\n' in text
    assert "self.total += batch.sum(  # noqa: TPU101\n" in text
    assert "return batch.sum().item()  # noqa: E501, TPU101\n" in text
    again = run_cli(["check", "."], root)
    assert again.exit_code == 0, again.stdout
