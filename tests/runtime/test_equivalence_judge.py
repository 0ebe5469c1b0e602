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


# --- the state the user's code keeps, at the end of every epoch ------------------------------


def _state(rank: int, *epochs: dict) -> dict:
    return {"kind": "equivalence_state", "rank": rank, "epochs": list(epochs)}


def _epoch(epoch: int, module=None, callbacks=None, logged=None) -> dict:
    return {
        "epoch": epoch,
        "module": module or {},
        "callbacks": callbacks or {},
        "logged": logged or {},
    }


def _float(value: float) -> dict:
    return {"t": "float", "v": value}


TRACE = _trace(0, [1.0, 0.9], [2.0, 1.9])


def test_a_float_that_became_a_tensor_is_named() -> None:
    """The training is the same; the module ends epoch 1 with a device tensor where it had a
    float: not equivalent, with the attribute, the epoch and both values."""
    losses = {"t": "list", "n": 1, "items": [_float(1.3707841038703918)]}
    tensor = {"t": "torch.Tensor", "device": "xla", "dtype": "float32", "shape": []}
    original = [TRACE, _state(0, _epoch(0, {"epoch_losses": losses}))]
    fixed = [
        TRACE,
        _state(0, _epoch(0, {"epoch_losses": {"t": "list", "n": 1, "items": [tensor]}})),
    ]
    result = judge(original, fixed, rewrites=[{**REWRITE, "code": "TPU101"}])
    assert result is not None and not result.equivalent
    first = result.first_difference
    assert first is not None and (first.epoch, first.core, first.step) == (0, 0, None)
    assert first.quantity == "state module attribute `epoch_losses[0]`"
    assert (first.original, first.fixed) == ("float 1.37078", "Tensor (xla, float32, [])")
    assert not result.needs_baseline  # a type: no second run needed to trust it
    assert result.line().startswith(
        "not equivalent at the end of epoch 0: module attribute `epoch_losses[0]` is float"
        " 1.37078 as written, Tensor (xla, float32, []) rewritten (core 0)"
    )
    assert result.to_json()["first_difference"]["epoch"] == 0


def test_state_numbers_within_the_tolerance_are_equal_and_ints_are_exact() -> None:
    original = [
        TRACE,
        _state(0, _epoch(0, {"mean": _float(1.0), "steps": {"t": "int", "v": 8}})),
    ]
    close = [
        TRACE,
        _state(0, _epoch(0, {"mean": _float(1.00001), "steps": {"t": "int", "v": 8}})),
    ]
    result = judge(original, close, rewrites=[REWRITE])
    assert result is not None and result.equivalent and result.states == 2
    off_by_one = [
        TRACE,
        _state(0, _epoch(0, {"mean": _float(1.0), "steps": {"t": "int", "v": 7}})),
    ]
    result = judge(original, off_by_one, rewrites=[REWRITE])
    assert result is not None and not result.equivalent
    first = result.first_difference
    assert first is not None and first.quantity == "state module attribute `steps`"
    assert result.needs_baseline  # the same type: maybe a value that changes from run to run


def test_what_differs_between_two_runs_as_written_is_not_compared() -> None:
    """A duration measured with a clock differs whatever the rewrite: a second run of the
    unchanged module shows it, and it is left out (and said)."""
    original = [TRACE, _state(0, _epoch(0, {"epoch_seconds": _float(1.52)}))]
    baseline = [TRACE, _state(0, _epoch(0, {"epoch_seconds": _float(1.81)}))]
    fixed = [TRACE, _state(0, _epoch(0, {"epoch_seconds": _float(2.4)}))]
    assert not judge(original, fixed, rewrites=[REWRITE]).equivalent  # type: ignore[union-attr]
    result = judge(original, fixed, rewrites=[REWRITE], baseline=baseline)
    assert result is not None and result.equivalent
    assert result.nondeterministic == ["module attribute `epoch_seconds`"]
    assert "not compared (they differ between two runs as written): module attribute" in (
        result.line()
    )


def test_callbacks_and_logged_values_are_compared_by_path() -> None:
    summary = {"t": "dict", "n": 1, "items": {"'mean'": _float(0.5)}}
    history = {"t": "list", "n": 1, "items": [summary]}
    logged = {"t": "torch.Tensor", "device": "cpu", "dtype": "float32", "shape": []}
    original = [
        TRACE,
        _state(
            0,
            _epoch(
                0,
                callbacks={"LossHistory": {"history": history}},
                logged={"val_acc": {**logged, "sum": 0.75, "absmax": 0.75, "head": [0.75]}},
            ),
        ),
    ]
    changed = {"t": "list", "n": 1, "items": [{**summary, "items": {"'mean'": _float(0.6)}}]}
    fixed = [
        TRACE,
        _state(
            0,
            _epoch(
                0,
                callbacks={"LossHistory": {"history": changed}},
                logged={"val_acc": {**logged, "sum": 0.5, "absmax": 0.5, "head": [0.5]}},
            ),
        ),
    ]
    result = judge(original, fixed, rewrites=[REWRITE])
    assert result is not None and not result.equivalent
    first = result.first_difference
    # The logged value comes before the callbacks in the comparison order.
    assert first is not None and first.quantity == "state logged value `val_acc`"
    fixed[1]["epochs"][0]["logged"] = original[1]["epochs"][0]["logged"]
    result = judge(original, fixed, rewrites=[REWRITE])
    assert result is not None and result.first_difference is not None
    assert (
        result.first_difference.quantity
        == "state callback `LossHistory` attribute `history[0]['mean']`"
    )
