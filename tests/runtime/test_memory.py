"""The memory check on real runs of modules of known size (targets/memory.py): the estimate
against the memory worked out by hand from the modules' shapes, here, as arithmetic that does
not use the estimator, and `--hbm` below it failing with the advice for the part that
dominates. Two runs in each layout: 2 emulated cores as threads of one process, and a v5e-4's
4 processes of one core each (the estimate is per core: the same figures)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from tpulint.runtime import verify
from tpulint.runtime.judge.render import render
from tpulint.runtime.judge.report import VerifyReport
from verify_helpers import ROOT, THREADS, VERIFY, emulate, emulate_args, target

pytestmark = pytest.mark.runtime

F32, BF16, INT64 = 4, 2, 8
# torch_xla's ParallelLoader keeps up to device_prefetch_size (default 8) batches on each
# core's device ahead of the step; Lightning's MpDeviceLoader leaves the default.
BATCHES_ON_DEVICE = 1 + 8
TOLERANCE = 0.25


def _close(estimate: int, hand: int) -> bool:
    return abs(estimate - hand) <= TOLERANCE * hand


@pytest.fixture(scope="module", params=(THREADS, "v5e-4"))
def layout(request: pytest.FixtureRequest) -> str:
    """This module's layouts (conftest's `layout`, at the core counts these modules fit)."""
    return request.param


def _cores(layout: str) -> int:
    return 2 if layout == THREADS else 4


@pytest.fixture(scope="module")
def linear_stack(xla: None, timed, layout: str) -> dict[str, Any]:
    """4 x Linear(1024, 1024) with Adam under bf16-true, through the CLI, with --hbm 30MiB."""
    argv = [
        *VERIFY,
        target("memory.py:LinearStack"),
        "--cores",
        str(_cores(layout)),
        *emulate_args(layout),
        "--json",
        "--trainer-args",
        '{"precision": "bf16-true"}',
        "--hbm",
        "30MiB",
    ]
    result = timed(
        f"memory: Linear stack, bf16-true, --hbm 30MiB (CLI, {layout})",
        subprocess.run,
        argv,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 1, result.stderr[-3000:]
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def conv_net(xla: None, timed, layout: str) -> VerifyReport:
    """Three 16-channel convolutions on 3 x 32 x 128 images, float32, with --hbm 12MiB."""
    return timed(
        f"memory: conv net, --hbm 12MiB (API, {layout})",
        verify,
        target("memory.py:ConvNet"),
        cores=_cores(layout),
        emulate=emulate(layout),
        cwd=ROOT,
        hbm="12MiB",
    )


def _linear_stack_by_hand(element: int, rows: int) -> dict[str, int]:
    """Sizes from the shapes: `element` bytes per float, activations and batch rows padded to
    `rows` (8 rows to a tile in 32 bits, 16 in bf16; every other dimension is 1024)."""
    width, layers, batch = 1024, 4, 8
    weights = layers * (width * width + width)  # 4 weights [1024, 1024], 4 biases [1024]
    assert batch <= rows
    row = rows * width * element  # one [8, 1024] array in the TPU's tiles
    return {
        "parameters": weights * element,
        "gradients": weights * element,
        "optimizer_state": 2 * weights * element,  # Adam's two moments (its steps stay on the host)
        "batch": 2 * row * BATCHES_ON_DEVICE,  # features and targets
        # Saved for backward: the 3 ReLU outputs (each the next Linear's input) and the last
        # Linear's output (mse_loss's input); the batch and the weights are counted above.
        "activations": 4 * row,
        "temporaries": 2 * row,  # two activation-sized gradients in backward
    }


def _conv_net_by_hand() -> dict[str, int]:
    batch, channels, height, width, classes = 8, 16, 32, 128, 10
    weights = (
        (channels * 3 * 3 * 3 + channels)  # conv 3 -> 16
        + 2 * (channels * channels * 3 * 3 + channels)  # two convs 16 -> 16
        + (channels * classes + classes)  # the head
    )
    # [8, 16, 32, 128]: 32 rows and 128 columns fill the tiles
    feature_map = batch * channels * height * width * F32
    return {
        "parameters": weights * F32,  # small arrays, counted unpadded here
        "gradients": weights * F32,
        "optimizer_state": 2 * weights * F32,
        "batch": (batch * 3 * height * width * F32 + batch * INT64) * BATCHES_ON_DEVICE,
        "activations": 3 * feature_map,  # the 3 ReLU outputs (the next conv's, the pool's input)
        "temporaries": 2 * feature_map,
    }


def test_linear_stack_estimate_matches_the_shapes(linear_stack: dict[str, Any]) -> None:
    memory = linear_stack["memory"]
    assert memory["precision"] == "bf16-true"
    hand = _linear_stack_by_hand(BF16, rows=16)
    for part, size in hand.items():
        assert _close(memory["parts"][part]["bytes"], size), (part, memory["parts"][part], size)
    assert _close(memory["estimated_bytes_per_core"], sum(hand.values()))
    # As the emulated run holds them: float32, untiled.
    as_run = _linear_stack_by_hand(F32, rows=8)
    assert _close(memory["as_run_bytes"], sum(as_run.values()))
    assert memory["recorded"]["optimizers"] == ["Adam"]


def test_linear_stack_over_hbm_fails_with_optimizer_advice(
    linear_stack: dict[str, Any], layout: str
) -> None:
    assert linear_stack["verdict"] == "fail"
    check = linear_stack["checks"]["memory"]
    assert check["status"] == "fail" and "of --hbm 30 MiB" in check["summary"]
    assert linear_stack["summary"].startswith("fail: memory: about 32.")
    cause = next(c for c in linear_stack["causes"] if c["check"] == "memory")
    assert "the optimizer state dominates" in cause["message"]
    assert "XLAFSDPStrategy" in cause["message"]
    assert f"on {_cores(layout)} cores" in cause["message"]
    assert 'precision="bf16-true"' not in cause["message"]  # already bf16
    memory = linear_stack["memory"]
    assert memory["limit"]["bytes"] == 30 << 20 and memory["verdict"] == "fail"
    assert memory["advice"] and memory["advice"][0] in cause["message"]


def test_xla_sizes_stand_beside_the_estimate(linear_stack: dict[str, Any]) -> None:
    """XLA's post-compilation sizes, read from torch_xla's analysis: the graph that updates
    the weights takes the parameters and Adam's moments (float32 here) as inputs."""
    xla = linear_stack["memory"]["xla"]
    assert xla["graphs"] >= 2
    as_run = _linear_stack_by_hand(F32, rows=8)
    static = as_run["parameters"] + as_run["optimizer_state"]
    assert xla["largest"]["input_bytes"] >= 0.95 * static


def test_conv_net_estimate_matches_the_shapes(conv_net: VerifyReport) -> None:
    memory = conv_net.memory
    hand = _conv_net_by_hand()
    for part in ("batch", "activations", "temporaries"):
        assert _close(memory["parts"][part]["bytes"], hand[part]), (part, memory["parts"][part])
    assert _close(memory["estimated_bytes_per_core"], sum(hand.values()))
    activations = memory["parts"]["activations"]["bytes"] + memory["parts"]["temporaries"]["bytes"]
    assert activations > memory["estimated_bytes_per_core"] / 2  # they dominate


def test_conv_net_over_hbm_fails_with_activation_advice(conv_net: VerifyReport) -> None:
    assert conv_net.verdict == "fail"
    assert conv_net.checks["memory"].status == "fail"
    cause = next(c for c in conv_net.causes if c.check == "memory")
    assert "activations kept for backward dominate" in cause.message
    assert "torch.utils.checkpoint.checkpoint" in cause.message
    assert "a per-core batch of 4 with `accumulate_grad_batches=2`" in cause.message
    assert 'precision="bf16-true"' in cause.message  # float32 weights
    text = render(conv_net)
    assert "Memory per core (an estimate for the TPU under precision 32-true" in text
    assert "FAIL    memory" in text


def test_a_bad_tpu_type_is_one_line(xla: None) -> None:
    result = subprocess.run(
        [*VERIFY, target("memory.py:ConvNet"), "--tpu-type", "v9"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "tpulint: error: --tpu-type v9: unknown TPU type; known: v2, v3, v4, v5e, v5p, v6e"
        " (e.g. v5e or v5e-8)"
    ]


def test_xla_post_compilation_lines_are_read_in_bytes() -> None:
    from tpulint.runtime.graph_files import parse
    from tpulint.runtime.judge.check_memory import xla_bytes

    analysis = """Compilation Analysis: Graph Hash: 1
Post Compilation Analysis: ================================================================
Post Compilation Analysis: Graph input size: 0.002117 GB
Post Compilation Analysis: Graph output size: 0.005985 GB
Post Compilation Analysis: Aliased Input size: 0.001995 GB
Post Compilation Analysis: Intermediate tensor size: 0.002003 GB
Post Compilation Analysis: Compiled program size: 0.000000 GB
Post Compilation Analysis: ----------------------------------------------------------------
Execution Analysis: Graph Hash: 1
Post Compilation Analysis: Graph input size: 1.000000 GB
Post Compilation Analysis: Graph output size: 0.500000 GB
Post Compilation Analysis: Aliased Input size: 0.000000 GB
Post Compilation Analysis: Intermediate tensor size: 0.250000 GB
Post Compilation Analysis: ----------------------------------------------------------------
"""
    first, second = [xla_bytes(e["memory"]) for e in parse(analysis) if e["kind"] == "post"]
    # "GB" are GiB: 0.005985 GiB is 3 x 2,142,248 bytes (a 535,562-parameter model with Adam).
    assert abs(first["output_bytes"] - 3 * 2_142_248) < 2**30 * 1e-6
    assert second == {
        "input_bytes": 2**30,
        "output_bytes": 2**29,
        "aliased_bytes": 0,
        "intermediate_bytes": 2**28,
    }


def test_a_failing_probe_does_not_fail_the_training(tmp_path) -> None:
    """Anything the probe cannot read ends the probing with an event, never the step."""
    from tpulint.runtime.child.memory import MemoryProbe
    from tpulint.runtime.events import EventLog, read_events

    class Module:
        def parameters(self):
            raise TypeError("parameters are not readable")

        buffers = parameters

    class Trainer:
        global_rank = 0
        current_epoch = 0

    probe = MemoryProbe(EventLog(tmp_path))
    probe.on_train_batch_start(Trainer(), Module(), {"x": 1}, 0)
    probe.on_train_batch_end(Trainer(), Module(), None, {"x": 1}, 0)
    events = read_events(tmp_path)
    assert [e["kind"] for e in events] == ["memory_error"]
    assert events[0]["where"] == "on_train_batch_start"
    assert events[0]["message"] == "parameters are not readable"
