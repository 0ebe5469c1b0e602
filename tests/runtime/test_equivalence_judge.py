"""The equivalence judge (runtime/judge/equivalence.py) on recorded events: pure logic, no
torch. The training runs themselves are in test_equivalence.py."""

from __future__ import annotations

import math

from tpulint.runtime.judge.equivalence import judge, ran, relative, tolerance_for

REWRITE = {"path": "model.py", "file": "/p/model.py", "line": 10, "code": "TPU202"}


def _trace(rank: int, loss: list[float], norm: list[float], planned: int | None = None) -> dict:
    event = {"kind": "equivalence_trace", "rank": rank, "loss": loss, "grad_norm": norm}
    if planned is not None:
        event["planned_steps"] = planned
    return event


def _params(**summaries: dict) -> dict:
    return {"kind": "equivalence_params", "role": "fixed", "parameters": summaries}


def _lines(*lines: int) -> dict:
    return {"kind": "equivalence_lines", "files": {"/p/model.py": list(lines)}}


def test_steps_after_the_planned_epochs_are_not_compared() -> None:
    """verify may add epochs to find a steady window, not as many in both runs: the steps
    beyond the planned ones differ in number and value, and do not count."""
    original = [_trace(0, [1.0, 0.9, 0.8, 5.0], [2.0, 1.9, 1.8, 9.0], planned=3), _lines(10)]
    fixed = [
        _trace(0, [1.0, 0.9, 0.8, 0.7, 0.6], [2.0, 1.9, 1.8, 1.7, 1.6], planned=3),
        _params(w={"max_abs": 0.0, "scale": 1.0, "numel": 4}),
    ]
    result = judge(original, fixed, rewrites=[REWRITE])
    assert result is not None and result.equivalent
    assert result.steps == 3 and result.parameters == 1
    assert result.max_relative_difference == 0.0


def test_fewer_planned_steps_on_one_side_is_a_difference() -> None:
    original = [_trace(0, [1.0, 0.9, 0.8], [2.0, 1.9, 1.8], planned=3)]
    fixed = [_trace(0, [1.0, 0.9], [2.0, 1.9], planned=2)]
    result = judge(original, fixed, rewrites=[REWRITE])
    assert result is not None and not result.equivalent
    first = result.first_difference
    assert first is not None and (first.step, first.quantity) == (2, "steps")
    assert (first.original, first.fixed) == (3, 2)
    assert math.isinf(result.max_relative_difference)


def test_a_run_without_planned_steps_compares_every_step() -> None:
    """Records without `planned_steps` (the run ended before its planned last epoch did)."""
    original = [_trace(0, [1.0, 0.9], [2.0, 1.9])]
    fixed = [_trace(0, [1.0, 0.95], [2.0, 1.9])]
    result = judge(original, fixed, rewrites=[REWRITE])
    assert result is not None and not result.equivalent
    first = result.first_difference
    assert first is not None and (first.step, first.quantity, first.core) == (1, "loss", 0)
    assert first.rewrite == {"path": "model.py", "line": 10, "code": "TPU202"}
    assert "first differing rewrite model.py:10 TPU202" in result.line()


def test_the_first_difference_is_the_earliest_step_on_any_core() -> None:
    original = [_trace(0, [1.0, 1.0, 1.0], [1.0] * 3), _trace(1, [1.0, 1.0, 1.0], [1.0] * 3)]
    fixed = [_trace(0, [1.0, 1.0, 2.0], [1.0] * 3), _trace(1, [1.0, 3.0, 1.0], [1.0] * 3)]
    result = judge(original, fixed, rewrites=[REWRITE])
    assert result is not None and result.first_difference is not None
    assert (result.first_difference.step, result.first_difference.core) == (1, 1)
    assert result.line().startswith("not equivalent from step 1: loss 1 vs 3 on core 1")


def test_parameters_are_compared_relative_to_their_magnitude() -> None:
    original = [_trace(0, [1.0], [1.0])]
    close = _params(w={"max_abs": 1e-6, "scale": 0.5, "numel": 4})
    far = _params(w={"max_abs": 1e-2, "scale": 0.5, "numel": 4})
    assert judge(original, [_trace(0, [1.0], [1.0]), close], rewrites=[]).equivalent
    result = judge(original, [_trace(0, [1.0], [1.0]), far], rewrites=[REWRITE])
    assert not result.equivalent
    assert result.first_difference.quantity == "parameter w"
    assert result.line().startswith("not equivalent at the end: parameter w differs by 0.01")


def test_rewrites_on_lines_the_training_did_not_run_are_not_checked() -> None:
    other = {**REWRITE, "line": 20, "end_line": 21}
    original = [_trace(0, [1.0], [1.0]), _lines(10, 11)]
    result = judge(original, [_trace(0, [1.0], [1.0])], rewrites=[REWRITE, other])
    assert result.rewrites == [REWRITE] and result.not_run == [other]
    assert result.line().endswith("; not run by the training, so not checked: TPU202 line 20")
    assert ran(other, None)  # nothing traced: not known, so counted as run
    assert ran(other, {"/p/model.py": {21}})  # any line of a multi-line rewrite


def test_no_record_is_no_verdict() -> None:
    assert judge([], [_trace(0, [1.0], [1.0])], rewrites=[]) is None


def test_relative_differences_and_tolerances() -> None:
    assert relative(1.0, 1.0) == 0.0
    assert relative(2.0, 1.0) == 0.5
    assert relative(float("nan"), float("nan")) == 0.0
    assert math.isinf(relative(float("nan"), 1.0))
    assert math.isinf(relative(None, 1.0))
    assert tolerance_for("32-true") == 1e-4
    assert tolerance_for("bf16-mixed") == 2e-2
    assert tolerance_for(None) == 1e-4
