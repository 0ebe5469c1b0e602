"""`.item()` in training_step: compiles stay stable, one transfer per step per core at that
line. Run through a real subprocess with --json, as a user or a CI job would."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from verify_helpers import CORES, ROOT, VERIFY, target

pytestmark = pytest.mark.runtime

ITEM_LINE = 19  # self.running += loss.item()


@pytest.fixture(scope="module")
def run(xla: None, timed) -> subprocess.CompletedProcess[str]:
    argv = [
        *VERIFY,
        target("item_in_step.py:ItemModel"),
        "--json",
        "--cores",
        str(CORES),
    ]
    return timed(
        "item() in training_step (subprocess, --json)",
        subprocess.run,
        argv,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def report(run: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    return json.loads(run.stdout)


def test_passes_with_a_transfer_warning(run: subprocess.CompletedProcess[str], report) -> None:
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    assert report["verdict"] == "pass"
    assert report["checks"]["compile_stability"]["status"] == "pass"
    assert report["checks"]["compile_stability"]["graphs_in_window"] == 0
    assert report["checks"]["transfers"]["status"] == "warn"
    assert report["checks"]["sharding"]["status"] == "pass"


def test_one_transfer_per_step_per_core(report: dict[str, Any]) -> None:
    assert report["checks"]["transfers"]["per_step_per_core"] == 1.0
    steady = [row for row in report["steps"] if row["phase"] == "steady"]
    assert steady
    for row in steady:
        assert row["transfers"] == CORES  # torch_xla's own count, summed over the cores
        assert {core["transfers"] for core in row["cores"].values()} == {1}  # the tracer's
    # Lightning's default checkpointing decides across the cores at each epoch's end (a
    # reduction through the host): bookkeeping, apart from the steady rate
    assert report["checks"]["transfers"]["bookkeeping"] > 0


def test_the_transfer_is_attributed_to_the_line_and_rule(report: dict[str, Any]) -> None:
    (cause,) = [
        c for c in report["causes"] if c["check"] == "transfers" and c["severity"] == "warn"
    ]
    assert cause["kind"] == "host_read"
    assert cause["location"]["path"] == "tests/runtime/targets/item_in_step.py"
    assert cause["location"]["line"] == ITEM_LINE
    assert cause["location"]["function"] == "training_step"
    assert "`item`" in cause["message"]
    assert [rule["code"] for rule in cause["rules"]] == ["TPU101"]
    judged = [row for row in report["steps"] if row["phase"] != "warmup"]
    assert cause["count"] == len(judged) * CORES
    assert cause["cores"] == list(range(CORES))
