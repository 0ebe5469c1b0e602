"""The memory estimate's arithmetic, without torch: TPU array sizes (dtype under the precision,
tiles), the HBM table and the option parsing, and the judgement on recorded events (verdicts,
the TPU types listed, the advice per dominant part). tests/runtime/test_memory.py checks the
estimate of real runs against sizes worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest
from tpulint.runtime.errors import VerifyError
from tpulint.runtime.judge.attribution import RuleIndex
from tpulint.runtime.judge.check_memory import check_memory, estimate, tpu_precision
from tpulint.runtime.judge.context import Context
from tpulint.runtime.judge.report import StepRow
from tpulint.runtime.tpu_hbm import (
    GIB,
    TPU_TYPES,
    find_type,
    format_bytes,
    memory_limit,
    parse_size,
)
from tpulint.runtime.tpu_layout import host_bytes, tpu_bytes, tpu_dtype

KIB, MIB = 1 << 10, 1 << 20


# --- array sizes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "dtype", "precision", "expected"),
    [
        # 32-bit: 8 x 128 tiles over the two minor dimensions.
        ([1024, 1024], "float32", "32-true", 1024 * 1024 * 4),
        ([10, 100], "float32", "32-true", 16 * 128 * 4),  # 10 rows -> 16, 100 columns -> 128
        ([3, 1000], "float32", "32-true", 4 * 1024 * 4),  # 3 rows: the 4 x 128 small tile
        ([1, 300], "float32", "32-true", 2 * 384 * 4),  # 1 row: the 2 x 128 small tile
        # The pair of dimensions that pads least: a 7 x 7 feature map is not padded to 8 x 128.
        ([64, 512, 7, 7], "float32", "32-true", 64 * 512 * 7 * 7 * 4),
        # bf16-true: float32 is bf16 on the TPU, 16 rows to a tile.
        ([1024, 1024], "float32", "bf16-true", 1024 * 1024 * 2),
        ([8, 1024], "float32", "bf16-true", 16 * 1024 * 2),
        ([8, 1024], "float64", "bf16-true", 16 * 1024 * 2),
        ([8, 1024], "float64", "32-true", 8 * 1024 * 8),  # 64 bits: two 32-bit halves
        ([8, 1024], "int64", "bf16-true", 8 * 1024 * 8),  # integers keep their dtype
        ([32, 128], "int8", "32-true", 32 * 128),
        ([8, 128], "int8", "32-true", 32 * 128),  # four rows to a 32-bit word
        ([8, 128], "bool", "32-true", 8 * 128 * 4),  # PRED is 4 bytes on a TPU
        # Rank 1: 256-element tiles below 1024 elements, 1024 from there; a scalar is one tile.
        ([10], "float32", "32-true", 256 * 4),
        ([1024], "float32", "32-true", 1024 * 4),
        ([1500], "float32", "32-true", 2048 * 4),
        ([8], "int64", "32-true", 256 * 8),
        ([], "float32", "32-true", 256 * 4),
        ([0, 128], "float32", "32-true", 0),
    ],
)
def test_tpu_array_sizes(shape: list[int], dtype: str, precision: str, expected: int) -> None:
    assert tpu_bytes(shape, dtype, precision) == expected


def test_only_bf16_true_changes_the_dtype_on_the_tpu() -> None:
    assert tpu_dtype("float32", "bf16-true") == "bfloat16"
    # 16-true sets XLA_USE_F16, which torch_xla 2.9 does not read: float32 on the TPU.
    for precision in ("32-true", "16-true", "32", None):
        assert tpu_dtype("float32", precision) == "float32"
    assert host_bytes([8, 1024], "float32") == 32 * KIB


# --- the HBM table and the options --------------------------------------------------------


def test_the_table_has_the_common_types_per_xla_device() -> None:
    hbm = {t.name: t.hbm_bytes // GIB for t in TPU_TYPES}
    assert hbm == {"v2": 8, "v3": 16, "v4": 32, "v5e": 16, "v5p": 95, "v6e": 32}
    per = {t.name: t.per for t in TPU_TYPES}
    assert per["v2"] == per["v3"] == "TensorCore" and per["v4"] == per["v5p"] == "chip"
    assert all("cloud.google.com/tpu/docs/" in t.source for t in TPU_TYPES)


@pytest.mark.parametrize(
    ("given", "name"),
    [
        ("v5e", "v5e"),
        ("v5e-8", "v5e"),
        ("V5LITEPOD-16", "v5e"),
        ("v4-8", "v4"),
        ("trillium", "v6e"),
    ],
)
def test_tpu_type_names(given: str, name: str) -> None:
    assert find_type(given).name == name


def test_an_unknown_tpu_type_lists_the_known_ones() -> None:
    with pytest.raises(VerifyError, match=r"--tpu-type v9: unknown TPU type; known: v2, v3"):
        find_type("v9")


@pytest.mark.parametrize(
    ("given", "size"),
    [
        ("16GiB", 16 * GIB),
        ("16G", 16 * GIB),
        ("16 GiB", 16 * GIB),
        ("16GB", 16 * 10**9),
        ("512MiB", 512 * MIB),
        ("1.5GiB", 3 * GIB // 2),
        ("17179869184", 16 * GIB),
    ],
)
def test_hbm_sizes(given: str, size: int) -> None:
    assert parse_size(given) == size


@pytest.mark.parametrize("given", ["lots", "16 GiBs", "-1GiB", "0", ""])
def test_a_bad_hbm_size_is_one_line(given: str) -> None:
    with pytest.raises(VerifyError, match="--hbm"):
        parse_size(given)


def test_limits() -> None:
    assert memory_limit(None, None) is None
    assert memory_limit("v5e-8", None).bytes == 16 * GIB  # type: ignore[union-attr]
    assert memory_limit(None, "40MiB").bytes == 40 * MIB  # type: ignore[union-attr]
    with pytest.raises(VerifyError, match="not both"):
        memory_limit("v5e", "16GiB")


def test_sizes_read_in_binary_units() -> None:
    assert format_bytes(512) == "512 B"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(16 * GIB) == "16 GiB"
    assert format_bytes(95 * GIB) == "95 GiB"
    assert format_bytes(300 * MIB) == "300 MiB"


# --- the judgement --------------------------------------------------------------------


def _context(cores: int = 8) -> Context:
    return Context(cores=cores, warmup=2, batch_multiple=8, cwd="", rules=RuleIndex())


def _linear_stack(width: int, layers: int, batch: int) -> dict[str, Any]:
    """What the child records for `layers` x Linear(width, width) with Adam."""
    weights = [[[width, width], "float32", layers], [[width], "float32", layers]]
    return {
        "kind": "memory",
        "parameters": weights,
        "gradients": weights,
        "optimizer_state": [
            [[width, width], "float32", 2 * layers],
            [[width], "float32", 2 * layers],
        ],
        "optimizers": ["Adam"],
        "batch": [[[batch, width], "float32", 2]],
        "prefetch": 8,
        "activations": [[[batch, width], "float32", layers]],
    }


def _conv_net(batch: int) -> dict[str, Any]:
    """Three 3x3 convolutions over [batch, 64, 224, 224] feature maps with SGD."""
    weights = [[[64, 64, 3, 3], "float32", 3], [[64], "float32", 3]]
    return {
        "kind": "memory",
        "parameters": weights,
        "gradients": weights,
        "optimizer_state": [],
        "optimizers": ["SGD"],
        "batch": [[[batch, 3, 224, 224], "float32", 1], [[batch], "int64", 1]],
        "prefetch": 8,
        "activations": [[[batch, 64, 224, 224], "float32", 3]],
    }


def _trainer(precision: str | None = None) -> dict[str, Any]:
    requested = {"precision": precision} if precision else {}
    return {"kind": "trainer", "requested": requested, "used": {}}


def _rows(batch: int) -> list[StepRow]:
    return [StepRow(0, 0, 0, "steady", 0, 0, 0, 0, 0.0, batch)]


def test_the_parts_add_up() -> None:
    result = estimate(_linear_stack(1024, 4, 8), "32-true")
    parts = {name: part["bytes"] for name, part in result["parts"].items()}
    params = 4 * (1024 * 1024 + 1024) * 4
    assert parts["parameters"] == parts["gradients"] == params
    assert parts["optimizer_state"] == 2 * params
    assert parts["batch"] == 2 * 8 * 1024 * 4 * 9  # the step's batch and 8 prefetched
    assert parts["activations"] == 4 * 8 * 1024 * 4
    assert parts["temporaries"] == 2 * 8 * 1024 * 4  # the two largest activations
    assert result["bytes"] == sum(parts.values())
    assert result["as_run_bytes"] == result["bytes"]  # float32 in aligned shapes: no padding


def test_bf16_true_is_the_tpu_precision_even_though_the_emulated_run_is_float32() -> None:
    # Emulated, verify runs bf16-true as 16-true; the requested precision is what runs on a TPU.
    events = [
        {
            "kind": "trainer",
            "requested": {"precision": "bf16-true"},
            "used": {"precision": "16-true"},
        }
    ]
    assert tpu_precision(events) == "bf16-true"
    assert tpu_precision([_trainer()]) == "32-true"
    half = estimate(_linear_stack(1024, 4, 16), "bf16-true")
    full = estimate(_linear_stack(1024, 4, 16), "32-true")
    assert half["bytes"] * 2 == full["bytes"]
    assert half["as_run_bytes"] == full["as_run_bytes"]


def test_without_a_limit_the_types_it_fits_are_listed() -> None:
    # About 10 GiB: fits the 16 GiB and larger types with 10% headroom, not v2's 8 GiB.
    recorded = _linear_stack(8192, 10, 8)
    check, causes, memory = check_memory(_context(), [_trainer(), recorded], _rows(8))
    assert check.status == "pass", check.summary
    assert memory["fits"] == ["v3", "v4", "v5e", "v5p", "v6e"]
    assert "not v2 (8 GiB per TensorCore)" in check.summary
    assert memory["verdict"] is None and memory["limit"] is None and not causes


def test_above_every_type_warns() -> None:
    recorded = _linear_stack(16384, 30, 8)  # about 120 GiB
    check, causes, _ = check_memory(_context(), [_trainer(), recorded], _rows(8))
    assert check.status == "warn"
    assert "above every TPU type's HBM" in check.summary and "v5p" in check.summary
    assert causes[0].severity == "warn"


def test_optimizer_state_dominates_advice() -> None:
    recorded = _linear_stack(8192, 10, 8)  # about 10 GiB, 5 of them Adam's two moments
    limit = memory_limit("v2", None)
    check, causes, memory = check_memory(_context(8), [_trainer(), recorded], _rows(8), limit)
    assert check.status == "fail" and memory["verdict"] == "fail"
    assert "of v2's 8 GiB per TensorCore" in check.summary
    message = causes[0].message
    assert "the optimizer state dominates" in message and "Adam keeps 2 values per" in message
    assert "XLAFSDPStrategy" in message and "on 8 cores" in message
    assert 'precision="bf16-true"' in message  # float32 weights
    assert causes[0].check == "memory" and causes[0].severity == "fail"


def test_activations_dominate_advice_gives_a_batch_that_fits() -> None:
    # 3 feature maps of 224 MiB in bf16 (224 columns padded to 256) and 2 more for backward.
    recorded = _conv_net(32)
    limit = memory_limit(None, "1GiB")
    check, causes, memory = check_memory(
        _context(), [_trainer("bf16-true"), recorded], _rows(32), limit
    )
    assert check.status == "fail", check.summary
    message = causes[0].message
    assert "activations kept for backward dominate" in message
    assert "torch.utils.checkpoint.checkpoint" in message
    # The largest per-core batch that divides 32, is a multiple of 8 and fits 90% of 1 GiB.
    assert "a per-core batch of 16 with `accumulate_grad_batches=2`" in message
    assert 'bf16-true"` keeps' not in message  # already bf16
    # The batch suggested fits: its estimate is below the limit less the headroom.
    smaller = estimate(_conv_net(16), "bf16-true")["bytes"]
    assert smaller < 0.9 * GIB < memory["estimated_bytes_per_core"]


def test_within_ten_percent_warns() -> None:
    recorded = _linear_stack(1024, 4, 8)
    total = estimate(recorded, "32-true")["bytes"]
    limit = memory_limit(None, str(int(total / 0.95)))
    check, causes, memory = check_memory(_context(), [_trainer(), recorded], _rows(8), limit)
    assert check.status == "warn" and memory["verdict"] == "warn"
    assert "within 10% of it" in check.summary
    assert causes and causes[0].severity == "warn"
    roomy = memory_limit(None, str(total * 2))
    check, causes, _ = check_memory(_context(), [_trainer(), recorded], _rows(8), roomy)
    assert check.status == "pass" and "50% of --hbm" in check.summary and not causes


def test_on_a_tpu_the_measured_peak_is_judged_against_the_device() -> None:
    recorded = _linear_stack(1024, 4, 8)
    measured = {
        "kind": "memory_measured",
        "where": "train_end",
        "bytes_used": 50 * MIB,
        "peak_bytes_used": 30 * GIB,
        "bytes_limit": 31 * GIB,
    }
    check, causes, memory = check_memory(_context(), [_trainer(), recorded, measured], _rows(8))
    assert memory["measured"]["peak_bytes_used"] == 30 * GIB
    assert memory["limit"] == {
        "name": "this TPU",
        "bytes": 31 * GIB,
        "source": "device",
        "per": "core",
    }
    assert check.status == "warn" and "(measured; estimate" in check.summary
    assert causes[0].severity == "warn" and "this TPU's 31 GiB" in causes[0].message


def test_xla_sizes_are_shown_beside_the_estimate() -> None:
    sizes = {
        "kind": "xla_memory",
        "sizes": [
            {"input_bytes": 10, "output_bytes": 20, "aliased_bytes": 5, "intermediate_bytes": 1},
            {"input_bytes": 100, "output_bytes": 80, "aliased_bytes": 80, "intermediate_bytes": 7},
        ],
    }
    _, _, memory = check_memory(_context(), [_trainer(), _linear_stack(256, 1, 8), sizes], _rows(8))
    assert memory["xla"]["graphs"] == 2
    assert memory["xla"]["largest"]["total_bytes"] == 107


def test_no_recorded_step_is_skipped() -> None:
    check, causes, memory = check_memory(_context(), [_trainer()], [])
    assert check.status == "skipped" and not causes and memory == {}


def _report(events: list[dict[str, Any]], emulated: bool) -> Any:
    from tpulint.runtime.judge.report import VerifyReport

    report = VerifyReport(target="m.py:M", verdict="pass", summary="pass")
    report.backend = {"device": "CPU" if emulated else "TPU", "emulated": emulated, "cores": 8}
    check, _, report.memory = check_memory(_context(), events, _rows(8))
    report.checks["memory"] = check
    return report


def test_the_memory_section_says_what_was_estimated_and_beside_what() -> None:
    from tpulint.runtime.judge.render import render

    sizes = {
        "kind": "xla_memory",
        "sizes": [
            {"input_bytes": MIB, "output_bytes": MIB, "aliased_bytes": 0, "intermediate_bytes": 0}
        ],
    }
    events = [_trainer("bf16-true"), _linear_stack(1024, 4, 16), sizes]
    text = render(_report(events, emulated=True))
    assert (
        "Memory per core (an estimate for the TPU under precision bf16-true: float32 stored as"
        " bf16, arrays padded to the TPU's tiles)"
    ) in text
    assert "  32.8 MiB = parameters 8.01 MiB + gradients 8.01 MiB + optimizer state 16 MiB" in text
    assert "batch 576 KiB (this step's and 8 prefetched)" in text
    assert "as run here (emulated, untiled): 65.6 MiB; XLA's sizes for the largest" in text
    assert "PASS    memory             about 32.8 MiB per core (estimate); fits every" in text
    measured = {
        "kind": "memory_measured",
        "bytes_used": MIB,
        "peak_bytes_used": 30 * MIB,
        "bytes_limit": 31 * GIB,
    }
    text = render(_report([*events, measured], emulated=False))
    assert "as run here" not in text and "XLA's sizes for the largest of the 1 graphs" in text
    assert "  measured on this TPU: peak 30 MiB of 31 GiB (xm.get_memory_info)" in text


def test_a_failed_probe_is_skipped_with_its_reason() -> None:
    failed = {
        "kind": "memory_error",
        "where": "on_train_batch_end",
        "type": "TypeError",
        "message": "bad",
    }
    check, causes, memory = check_memory(_context(), [_trainer(), failed], [])
    assert check.status == "skipped" and not causes and memory == {}
    assert check.summary == (
        "the memory probe failed in on_train_batch_end (TypeError: bad); please report it"
    )
