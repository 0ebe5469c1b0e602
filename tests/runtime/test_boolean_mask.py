"""A boolean-mask loss fails compile stability, with the line and rule named."""

from __future__ import annotations

import pytest
from tpulint.runtime import verify
from tpulint.runtime.judge.report import VerifyReport
from verify_helpers import CORES, ROOT, emulate, target

pytestmark = pytest.mark.runtime

MASK_LINE = 27  # loss = F.cross_entropy(logits[labeled], labels[labeled])


@pytest.fixture(scope="module")
def report(xla: None, timed, layout: str) -> VerifyReport:
    return timed(
        f"boolean-mask loss (API, {layout})",
        verify,
        target("boolean_mask.py:MaskedLossModel"),
        cores=CORES,
        emulate=emulate(layout),
        cwd=ROOT,
    )


def test_fails_compile_stability_at_the_mask_line(report: VerifyReport) -> None:
    assert report.error is None, report.error_detail
    assert report.verdict == "fail" and report.exit_code == 1
    assert report.checks["compile_stability"].status == "fail"
    failing = [c for c in report.causes_for("compile_stability") if c.severity == "fail"]
    assert failing, report.causes
    # Either the data-dependent shape itself, or (if XLA aborted) the divergence it caused.
    cause = failing[0]
    assert cause.kind in ("data_dependent_shape", "diverged_replicas")
    assert str(cause.location) == f"tests/runtime/targets/boolean_mask.py:{MASK_LINE}"
    assert "TPU202" in cause.codes
    assert f"boolean_mask.py:{MASK_LINE}" in report.summary


def test_sizes_vary_across_cores_and_steps(report: VerifyReport) -> None:
    cause = next(c for c in report.causes if c.kind == "data_dependent_shape")
    assert cause.severity == "fail"
    assert len(cause.cores) == CORES
    assert "boolean-mask indexing" in cause.message
    # the distinct selected counts are the graphs: more than one was seen
    assert "seen across 8 cores" in cause.message


def test_host_side_nonzero_transfers_are_attributed(report: VerifyReport) -> None:
    assert report.checks["transfers"].status == "warn"
    cause = next(c for c in report.causes if c.kind == "host_shape_computation")
    assert cause.location is not None and cause.location.line == MASK_LINE
    assert "aten::nonzero" in cause.message
    # two boolean-mask indexings per step: torch_xla runs nonzero on the host for each
    assert report.checks["transfers"].details["per_step_per_core"] >= 2


def test_sharding_is_still_fine(report: VerifyReport) -> None:
    assert report.checks["sharding"].status == "pass"
