"""What a condition says about how often the code under it runs (tpulint.analysis.guards)."""

from __future__ import annotations

import pytest

from tpulint.analysis.guards import (
    RARE,
    flush_targets,
    flushes,
    marker_targets,
    resets,
    shape_kinds,
)


@pytest.mark.parametrize(
    "test",
    [
        "torch.isnan(x).any()",
        "torch.any(torch.isnan(vel))",
        "x.isinf().any() or torch.isnan(x).any()",
        "not torch.isfinite(loss).all()",
        "self.training and math.isnan(value)",
    ],
)
def test_numeric_anomaly_branches_are_rare(test: str) -> None:
    assert RARE in shape_kinds(test)


@pytest.mark.parametrize(
    ("test", "negated"),
    [
        ("torch.isfinite(loss).all()", False),  # the common path
        ("not torch.isnan(loss)", False),
        ("torch.isnan(a).any() or b > 0", False),  # `b > 0` may hold on every step
        ("torch.isnan(loss).any()", True),  # after `if ...: return`: the common path
        ("not torch.isfinite(loss)", True),
    ],
)
def test_the_common_path_is_not_rare(test: str, negated: bool) -> None:
    assert RARE not in shape_kinds(test, negated)


def test_accumulate_then_flush_targets() -> None:
    assert flush_targets("self.embs.shape[0] > max_size") == ["self.embs"]
    assert flush_targets("len(self.buf) >= 64 and self.training") == ["self.buf"]
    assert flush_targets("100 < self.x.size(0)") == ["self.x"]
    # Non-empty, a local, a bound of 1: true on (nearly) every step.
    assert flush_targets("len(self.buf) > 0") == []
    assert flush_targets("x.shape[0] > n") == []
    assert flush_targets("len(self.buf) > 1") == []


def test_flushes() -> None:
    assert flushes("self.bank = None", "self.bank")
    assert flushes("self.rows.clear()", "self.rows")
    assert flushes("self.rows = []", "self.rows")
    assert not flushes("self.rows = self.rows[1:]", "self.rows")


def test_elapsed_since_marker_targets() -> None:
    assert marker_targets("epoch - self.last_mark >= self.every") == ["self.last_mark"]
    assert marker_targets("time.time() > self.logged_at + 60") == ["self.logged_at"]
    assert marker_targets("self.every <= step - self.state.mark and ok") == ["self.state.mark"]
    # A best value, a local marker, a marker added (not subtracted): no interval.
    assert marker_targets("score > self.best") == []
    assert marker_targets("epoch - last >= every") == []
    assert marker_targets("epoch + self.offset >= every") == []


def test_resets() -> None:
    assert resets("self.last_mark = epoch", "self.last_mark")
    assert resets("self.next_at += self.every", "self.next_at")
    assert not resets("if self.last_mark == epoch: pass", "self.last_mark")
    assert not resets("self.last_mark_value = epoch", "self.last_mark")
