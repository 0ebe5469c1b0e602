"""One problem, one finding (issue 21 item 7): a rule's findings within one statement are
merged into one with related places, a finding that repeats another rule's finding of the
same expression is folded into it, and the related places reach JSON and SARIF."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import jsonschema

from tests.helpers import make_project, run_cli
from tpulint.config.settings import Config
from tpulint.engine.source import check_source

DATA = Path(__file__).parent / "data"
REPORT_SCHEMA = Path(__file__).resolve().parent.parent / "tpulint" / "data" / "report.schema.json"

STEP = textwrap.dedent(
    """\
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self(batch); acc = loss * 2; grad = loss.abs(); scale = loss.mean()
            print(f"{loss} {acc} {grad} {scale}")
            n = (batch["mask"] == 1).sum().item()
            x = batch["x"][:, :n]
            for i in range(int(batch["count"])):
                x = x + self.block(x)
            return x.sum() + loss
    """
)


def _check(source: str, *codes: str) -> list:
    return check_source(source, "model.py", Config.from_mapping({"select": list(codes)}))


def test_several_tensors_in_one_statement_are_one_finding() -> None:
    found = [d for d in _check(STEP, "TPU103") if d.start.line == 8]
    assert len(found) == 1
    finding = found[0]
    assert "and in the same statement: `acc`, `grad`, `scale`" in finding.message
    assert [r.start.line for r in finding.related] == [8, 8, 8]
    assert all(r.message.startswith("also in this statement") for r in finding.related)


def test_a_size_read_with_item_is_one_finding_with_the_size_in_its_message() -> None:
    both = _check(STEP, "TPU101", "TPU205")
    assert [(d.code, d.start.line) for d in both] == [("TPU101", 9)]
    assert "TPU205" in both[0].message and 'batch["x"][:, :n]' in both[0].message
    assert both[0].related and both[0].related[0].start.line == 9
    # Without the host-read rule, the size is reported on its own.
    alone = _check(STEP, "TPU205")
    assert [(d.code, d.start.line) for d in alone] == [("TPU205", 9)]


def test_a_loop_counted_by_a_host_read_is_one_finding() -> None:
    both = [d for d in _check(STEP, "TPU103", "TPU203") if d.start.line == 11]
    assert [d.code for d in both] == ["TPU103"]
    assert "TPU203" in both[0].message
    alone = _check(STEP, "TPU203")
    assert [(d.code, d.start.line) for d in alone] == [("TPU203", 11)]


def test_related_places_reach_json_and_sarif(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"model.py": STEP}, pyproject='select = ["TPU103"]\n')
    report = json.loads(run_cli(["check", ".", "-o", "json"], root).stdout)
    jsonschema.validate(report, json.loads(REPORT_SCHEMA.read_text()))
    merged = next(d for d in report["diagnostics"] if d["start"]["line"] == 8)
    assert len(merged["related"]) == 3 and merged["related"][0]["path"] == "model.py"
    sarif = json.loads(run_cli(["check", ".", "-o", "sarif"], root).stdout)
    jsonschema.validate(sarif, json.loads((DATA / "sarif-schema-2.1.0.json").read_text()))
    result = next(
        r
        for r in sarif["runs"][0]["results"]
        if r["locations"][0]["physicalLocation"]["region"]["startLine"] == 8
    )
    related = result["relatedLocations"]
    assert [r["id"] for r in related] == [1, 2, 3]
    assert related[0]["physicalLocation"]["region"]["startLine"] == 8
    assert related[0]["message"]["text"]


def test_a_suppression_on_the_statement_silences_the_merged_finding() -> None:
    source = STEP.replace(
        'print(f"{loss} {acc} {grad} {scale}")',
        'print(f"{loss} {acc} {grad} {scale}")  # noqa: TPU103',
    )
    assert not [d for d in _check(source, "TPU103") if d.start.line == 8]
