"""Target forms: a zero-argument factory with --init-args, and a DataModule."""

from __future__ import annotations

import pytest
from tpulint.runtime import verify
from tpulint.runtime.judge.report import VerifyReport
from verify_helpers import CORES, ROOT, emulate, target

pytestmark = pytest.mark.runtime


@pytest.fixture(scope="module")
def report(xla: None, timed, layout: str) -> VerifyReport:
    return timed(
        f"factory + --init-args + --datamodule (API, {layout})",
        verify,
        target("factory.py:make_model"),
        init_args='{"lr": 0.05}',
        datamodule=target("datamodule.py:RandomDataModule"),
        cores=CORES,
        emulate=emulate(layout),
        cwd=ROOT,
    )


def test_factory_with_datamodule_passes(report: VerifyReport) -> None:
    assert report.error is None, report.error_detail
    assert report.verdict == "pass"
    assert report.datamodule == target("datamodule.py:RandomDataModule")
    assert report.init_args == {"lr": 0.05}


def test_the_datamodule_data_is_sharded(report: VerifyReport) -> None:
    assert report.checks["sharding"].status == "pass"
    # every epoch trained (2 steps each: verify may add one to find a steady window)
    assert [e.dataset_size for e in report.shards] == [256] * report.run["epochs"]
    assert report.run["epochs"] >= 3
    assert {c.indices for e in report.shards for c in e.cores} == {32}
    assert report.checks["batch_geometry"].details["per_core_batch"] == 16
