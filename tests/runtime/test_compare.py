"""--compare: the module as written next to its `tpulint fix` output."""

from __future__ import annotations

import json

import pytest
from tpulint.runtime import compare
from tpulint.runtime.judge.render import render_compare
from tpulint.runtime.judge.report import CompareReport
from verify_helpers import CORES, ROOT, target

pytestmark = pytest.mark.runtime

LOG_LINE = 23  # self.log("train_loss", loss.item())


@pytest.fixture(scope="module")
def result(xla: None, timed) -> CompareReport:
    return timed(
        "--compare: two runs (API)",
        compare,
        target("log_item.py:LogItemModel"),
        cores=CORES,
        cwd=ROOT,
    )


def test_fix_was_applied_to_a_copy(result: CompareReport) -> None:
    assert result.changed
    assert {(f["code"], f["line"]) for f in result.fixes} >= {("TPU102", LOG_LINE)}
    diff = result.diffs["tests/runtime/targets/log_item.py"]
    assert '-        self.log("train_loss", loss.item())' in diff
    assert '+        self.log("train_loss", loss)' in diff
    source = (ROOT / "tests/runtime/targets/log_item.py").read_text()
    assert "loss.item()" in source  # the user's file is untouched


def test_transfers_before_and_after(result: CompareReport) -> None:
    before, after = result.original, result.fixed
    assert before.error is None and after.error is None
    assert before.checks["transfers"].details["per_step_per_core"] == 1.0
    (read,) = [c for c in before.causes if c.kind == "host_read" and c.severity == "warn"]
    assert str(read.location) == f"tests/runtime/targets/log_item.py:{LOG_LINE}"
    assert "TPU102" in read.codes
    assert after.checks["transfers"].status == "pass"
    assert after.checks["transfers"].details["per_step_per_core"] == 0
    assert before.checks["sharding"].status == after.checks["sharding"].status == "pass"


def test_rendered_side_by_side(result: CompareReport) -> None:
    text = render_compare(result)
    assert "as written" in text and "after tpulint fix" in text
    row = next(line for line in text.splitlines() if "transfers per step per core" in line)
    assert row.split()[-2:] == ["1.0", "0.0"]
    assert f"TPU102 line {LOG_LINE}" in text


def test_json(result: CompareReport) -> None:
    data = json.loads(result.to_json_text())
    assert data["kind"] == "compare" and data["schema_version"] == 1
    assert data["original"]["kind"] == data["fixed"]["kind"] == "verify"
    assert data["exit_code"] == result.exit_code
