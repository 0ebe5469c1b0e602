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


STEP = (
    "\n\nclass Model(L.LightningModule):\n"
    "    def __init__(self):\n        super().__init__()\n"
    "        self.layer = torch.nn.Linear(4, 4)\n"
    "{init}"
    "    def training_step(self, batch, batch_idx):\n        y = {step}\n"
    "        print(y.item())\n        return y.sum()\n\n"
    "    def configure_optimizers(self):\n"
    "        return torch.optim.SGD(self.parameters(), lr=0.1)\n\n\n"
    'if __name__ == "__main__":\n    L.Trainer(accelerator="tpu").fit(Model())\n'
)


def _stored_chain(count: int) -> str:
    """`count` classes that each store what `attach` gets and call it in `run`: resolving
    each `self.m(x)` asks what the callers of its `attach` pass (the caller index)."""
    out = "import lightning as L\nimport torch\n"
    for i in range(count):
        out += (
            f"\n\nclass Holder{i}:\n    def attach(self, m):\n        self.m = m\n\n"
            "    def run(self, x):\n        return self.m(x)\n"
        )
    init = "        self.holder = Holder0()\n        self.holder.attach(self.layer)\n\n"
    return out + STEP.format(init=init, step="self.holder.run(batch)")


def _return_chain(count: int) -> str:
    """`count` functions, each returning what the next returns, the last a module: the class
    of `self.net` is found at the end of the chain."""
    out = "import lightning as L\nimport torch\n\n\nclass Net(torch.nn.Module):\n"
    out += "    def forward(self, x):\n        return x\n"
    for i in range(count):
        returned = f"make{i + 1}()" if i < count - 1 else "Net()"
        out += f"\n\ndef make{i}():\n    return {returned}\n"
    return out + STEP.format(init="        self.net = make0()\n\n", step="self.net(batch)")


def test_cli_deep_call_chains_do_not_stop_the_run(tmp_path: Path) -> None:
    # The project model's questions follow calls across functions: thousands deep here,
    # beyond Python's recursion limit if each step added frames (the caller index asked for
    # while it is built, the return values of a chain). The run finishes and reports.
    (tmp_path / "stored.py").write_text(_stored_chain(2000))
    (tmp_path / "returned.py").write_text(_return_chain(3000))
    result = run_subprocess(["check", "--no-cache", "--select", "TPU101", "."], cwd=tmp_path)
    assert result.exit_code == 1, result.stderr
    assert result.stderr == ""
    found = [line.split(" ", 2)[:2] for line in result.stdout.splitlines() if " TPU101 " in line]
    assert [name.split(":")[0] for name, _ in found] == ["returned.py", "stored.py"]


def test_prefix_truths_are_the_and_and_or_of_every_prefix() -> None:
    # inline_region combines a chain's operands prefix by prefix in one pass; it must say what
    # _and/_or of each prefix says (False/True decide, None is unknown, facts are kept).
    from itertools import product

    from tpulint.analysis.scope_facts import _and, _or, _prefix_truths

    values = [True, False, None, ["attr", "on_tpu"], ["flag", "f", "p", None]]
    for length in range(1, 5):
        for parts in product(values, repeat=length):
            for conjunction, combine in ((True, _and), (False, _or)):
                expected = [combine(list(parts[:i])) for i in range(1, length + 1)]
                assert list(_prefix_truths(list(parts), conjunction)) == expected
