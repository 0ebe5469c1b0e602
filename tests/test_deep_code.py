"""Deeply nested valid code is analysed (on the engine's large-stack thread), or reported as
TPL004 when even that does not fit, and never stops the run."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from tests.helpers import run_subprocess
from tpulint.config.settings import Config
from tpulint.engine.source import check_source, fix_source

MODULE = (
    "import lightning as L\n\n\nclass M(L.LightningModule):\n"
    "    def training_step(self, batch, batch_idx):\n"
    "        x = batch.cuda()\n        value = {expr}\n        return x.sum().item()\n"
)


# TPU006 (preview) is the rule with a safe fix the deep expression sits next to.
PREVIEW = Config.from_mapping({"preview": True})


def _codes(diagnostics) -> list[str]:
    return sorted(d.code for d in diagnostics)


def test_a_500_term_chain_is_checked_and_fixed() -> None:
    source = MODULE.format(expr=" + ".join(f"a{i}" for i in range(500)))
    assert _codes(check_source(source, "deep.py", PREVIEW)) == ["TPU006", "TPU101"]
    result = fix_source(source, "deep.py", PREVIEW)
    assert result.error is None
    assert [d.code for d in result.fixed] == ["TPU006"]
    assert "batch.to(self.device)" in result.source
    assert check_source(result.source, "deep.py", PREVIEW)[0].code == "TPU101"


def test_long_string_concatenations_are_checked() -> None:
    implicit = MODULE.format(expr=" ".join(f'"s{i}"' for i in range(3000)))
    explicit = MODULE.format(expr=" + ".join(f'"s{i}"' for i in range(1000)))
    for source in (implicit, explicit):
        assert _codes(check_source(source, "deep.py", PREVIEW)) == ["TPU006", "TPU101"]
        assert fix_source(source, "deep.py", PREVIEW).fixed


def test_an_and_chain_that_overflows_the_main_threads_stack() -> None:
    # 10,000 terms: CPython compiles it; libcst's native parser needs more than the 8 MB of a
    # main thread's stack (a segfault there), and gets it on the engine's thread.
    source = MODULE.format(expr=" and ".join(f"a{i}" for i in range(10_000)))
    assert _codes(check_source(source, "deep.py", PREVIEW)) == ["TPU006", "TPU101"]


def test_what_libcst_cannot_parse_is_tpl004_not_a_syntax_error() -> None:
    source = MODULE.format(expr=" ".join(f'"s{i}"' for i in range(6000)))
    compile(source, "deep.py", "exec")  # valid Python
    found = check_source(source, "deep.py")
    assert _codes(found) == ["TPL004"]
    assert found[0].message.startswith("Not checked: Python accepts this code, but libcst")
    result = fix_source(source, "deep.py")
    assert result.source == source and not result.fixed
    assert _codes(result.remaining) == ["TPL004"]


def test_the_recursion_limit_is_restored_and_threads_are_reused() -> None:
    limit = sys.getrecursionlimit()
    source = MODULE.format(expr=" + ".join(f"a{i}" for i in range(500)))
    before = {t.ident for t in threading.enumerate() if t.name == "tpulint-deep"}
    check_source(source, "deep.py")
    check_source(source, "deep.py")
    after = {t.ident for t in threading.enumerate() if t.name == "tpulint-deep"}
    assert sys.getrecursionlimit() == limit
    assert len(after) == 1 and (not before or before == after)


def test_a_rule_bug_is_still_an_internal_error(monkeypatch) -> None:
    from tpulint.rules.host_sync.item_in_hot_path import ItemInHotPath

    from tpulint.engine.source import InternalError

    def broken(self, node):
        raise KeyError("boom")

    monkeypatch.setattr(ItemInHotPath, "visit_Call", broken, raising=False)
    source = MODULE.format(expr="1")
    try:
        check_source(source, "deep.py", Config.from_mapping({"select": ["TPU101"]}))
    except InternalError as exc:
        assert "KeyError" in str(exc)
    else:
        raise AssertionError("expected an InternalError")


def test_cli_deep_files_do_not_stop_the_run(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.tpulint]\npreview = true\n")
    chain = " + ".join(f"a{i}" for i in range(500))
    strings = " ".join(f'"s{i}"' for i in range(6000))
    (tmp_path / "deep.py").write_text(MODULE.format(expr=chain))
    (tmp_path / "concat.py").write_text(MODULE.format(expr=strings))
    (tmp_path / "train.py").write_text("import lightning as L\nL.Trainer(tpu_cores=8)\n")
    result = run_subprocess(["check", "--no-cache", "."], cwd=tmp_path)
    assert result.exit_code == 1, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert any(
        line.startswith("concat.py:8:9: TPL004 Not checked: Python accepts") for line in lines
    )
    assert any(line.startswith("deep.py:6:13: TPU006") for line in lines)
    assert any(line.startswith("train.py:2:11: TPU001") for line in lines)
