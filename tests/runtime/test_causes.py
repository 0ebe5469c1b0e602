"""Causes where the user can act (issues 17 and 20), each on a real module run on emulated
cores, nothing mocked:

* new graphs are blamed on the user's line whose value changes (a MoCo queue written at an
  offset read from the device), or on the batch when its shapes change (a graph batch);
* a replica that crashes, and an optimizer built before the move to XLA, are verdicts at the
  user's line;
* reads torch_xla makes in C++ (a list indexed by a device tensor, a tensor used as a size)
  are counted once per step at their line;
* fallbacks are judged as a TPU would judge them (nearest upsampling's backward is lowered on
  TPU), with advice for the op (lgamma, scatter_reduce's include_self, torchmetrics'
  validate_args);
* torch.distributed under the XLA strategy, at run time and by `tpulint check`;
* exceptions Lightning raises about a Lightning 1.x hook name the hook and its replacement.

Every verify run here happens in both layouts (verify_helpers.LAYOUTS), with the same
assertions: as threads of one process and as a TPU VM's process per core; `tpulint check`
runs once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from click.testing import CliRunner
from tpulint.runtime import api, verify
from tpulint.runtime.command import verify_command
from tpulint.runtime.judge.render import render
from tpulint.runtime.judge.report import VerifyReport
from verify_helpers import (
    CORES,
    ROOT,
    THREADS,
    emulate,
    emulate_args,
    target,
)

pytestmark = pytest.mark.runtime

RUNS = {
    "queue": "moco_queue.py:MovingQueue",
    "graphs": "graph_batch.py:GraphRegression",
    "optimizer": "early_optimizer.py:EarlyOptimizer",
    "crash": "crashing.py:SegfaultInStep",
    "list": "list_index.py:ListIndexedByTensor",
    "size": "list_index.py:SizeFromDevice",
    "upsample": "upsampling.py:NearestDecoder",
    "gamma": "op_advice.py:GammaLikelihood",
    "scatter": "op_advice.py:ScatterMax",
    "accuracy": "op_advice.py:ValidatedAccuracy",
    "legacy": "op_advice.py:LegacyHooks",
    "two_lines": "op_advice.py:FallbacksOnTwoLines",
    "epoch_end": "epoch_end_metric.py:EpochEndBinning",
    "gather": "ddp_code.py:GatheredNegatives",
    "stream": "ddp_code.py:RankShardedStream",
}
WHERE = "tests/runtime/targets"
# Every step of the queue module compiles a new graph (one per offset), in each of a v5e-8's 8
# processes, and verify adds 3 epochs while new graphs still come: 4 steps an epoch (2 past
# the warm-up in epoch 0, a steady window of one epoch's 4 >= steady.MIN_STEADY_STEPS) show
# the same cause as its 8 (24 graphs per process instead of 48, the longest run here).
OPTIONS = {"queue": {"steps": 4}}


# What verify replaces, asked for explicitly: every override the header lists must leave the
# module what it uses (uses_trainer_objects.py reads each of them).
OVERRIDDEN = {
    "logger": True,
    "enable_checkpointing": True,
    "enable_progress_bar": True,
    "enable_model_summary": True,
    "max_epochs": 20,
}


def _all(timed, tmp: Any, layout: str) -> dict[str, Any]:
    names = list(RUNS)

    def one(name: str) -> VerifyReport:
        return verify(
            target(RUNS[name]),
            cores=CORES,
            cwd=ROOT,
            emulate=emulate(layout),
            **OPTIONS.get(name, {}),
        )

    def objects() -> VerifyReport:
        asked = {**OVERRIDDEN, "default_root_dir": str(tmp / "root")}
        return verify(
            target("uses_trainer_objects.py:UsesTrainerObjects"),
            cores=CORES,
            cwd=ROOT,
            trainer_args=asked,
            emulate=emulate(layout),
        )

    # Threads: three at a time (the modules are small, the machine has two cores). Processes:
    # one at a time: with two runs of eight processes on two cores, one CI run counted 23 of
    # the 24 per-step reads of the list-indexing module (0.958 per step per core), and an
    # earlier one with three at a time judged a core out of data (the one way found to produce
    # that, an exception in MpDeviceLoader's loader thread, is now raised as the exception).
    workers = 3 if layout == THREADS else 1

    def run() -> dict[str, Any]:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {name: pool.submit(one, name) for name in names}
            futures["objects"] = pool.submit(objects)
            return {name: future.result() for name, future in futures.items()}

    count = len(names) + 1
    return timed(f"{count} modules with causes to place, {workers} at a time ({layout})", run)


@pytest.fixture(scope="module")
def runs(xla: None, timed, tmp_path_factory: pytest.TempPathFactory, layout: str) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("causes")
    found = _all(timed, tmp, layout)
    found["tmp"] = tmp
    return found


@pytest.fixture(scope="module")
def checked() -> subprocess.CompletedProcess[str]:
    """`tpulint check` on the DDP-style module (static: no layout)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tpulint",
            "check",
            "--preview",  # TPU505's guard shape is in preview
            "--output-format",
            "json",
            "--no-cache",
            f"{WHERE}/ddp_code.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _cause(report: VerifyReport, kind: str) -> Any:
    found = [c for c in report.causes if c.kind == kind]
    assert found, [(c.kind, c.message) for c in report.causes]
    return found[0]


def test_new_graphs_name_the_line_whose_value_changes(runs: dict[str, Any]) -> None:
    report = runs["queue"]
    assert report.error is None, report.error_detail
    assert report.verdict == "fail"
    cause = _cause(report, "new_graphs_in_window")
    assert str(cause.location) == f"{WHERE}/moco_queue.py:29"  # the slice assignment
    assert "an offset of this line (`self.queue[ptr : ptr + batch_size] = keys`)" in cause.message
    assert "padding=" in cause.message  # what differs between the graphs, from their HLO
    # the value comes from the host read on the line before
    assert "the host read `ptr = int(self.queue_ptr)` at :28" in cause.message
    assert "index_copy_" in cause.message
    # never Lightning's frame, never a phase switch
    assert "lightning" not in cause.message and "phase switch" not in cause.message
    assert report.summary.endswith(f"new graphs keep coming at {WHERE}/moco_queue.py:29")
    read = _cause(report, "host_read")
    assert str(read.location) == f"{WHERE}/moco_queue.py:28"


def test_a_graph_batch_with_varying_node_counts(runs: dict[str, Any]) -> None:
    report = runs["graphs"]
    assert report.error is None, report.error_detail
    batches = report.checks["batch_geometry"]
    assert batches.status == "warn"
    assert batches.details["tensors"] == ["x", "edge_index", "graph_index", "y"]
    assert [v["name"] for v in batches.details["varying"]] == ["x", "edge_index", "graph_index"]
    assert batches.details["per_core_batch"] == 8  # the graphs (y: 8x1), not the nodes
    varying = _cause(report, "varying_batch_shapes")
    assert "`x` (dim 0:" in varying.message and "(while `y` stays fixed)" in varying.message
    assert str(varying.location) == f"{WHERE}/graph_batch.py:73"  # the DataLoader
    # the new graphs: the inputs' shapes, not Lightning's frame
    graphs = _cause(report, "new_graphs_in_window")
    assert "the graphs take inputs of other shapes" in graphs.message
    assert str(graphs.location) == f"{WHERE}/graph_batch.py:73"
    assert report.verdict == "fail"


def test_an_optimizer_built_before_the_move_fails_at_its_line(runs: dict[str, Any]) -> None:
    report = runs["optimizer"]
    assert report.error is None, report.error_detail
    assert report.verdict == "fail" and report.exit_code == 1
    cause = report.causes[0]
    assert (cause.kind, cause.severity) == ("stale_optimizer", "fail")
    assert str(cause.location) == f"{WHERE}/early_optimizer.py:23"
    assert "AdamW (optimizer 0) holds 4 of its 4 parameters on cpu" in cause.message
    assert "build it in configure_optimizers()" in cause.message
    assert cause.cores and set(cause.cores) <= set(range(CORES))  # every core that got there
    assert report.steps == []  # stopped before the first step, not a crash


def test_a_crashed_replica_names_core_step_and_line(runs: dict[str, Any]) -> None:
    report = runs["crash"]
    assert report.error is None, report.error_detail
    assert report.verdict == "fail" and report.run["status"] == "crashed"
    cause = report.causes[0]
    assert (cause.kind, cause.cores) == ("crash", [2])
    assert str(cause.location) == f"{WHERE}/crashing.py:21"  # native_kernel's line
    assert cause.message.startswith("core 2 died of SIGSEGV at step")
    assert "inside `string_at` (ctypes/__init__.py:" in cause.message
    assert "Fatal Python error: Segmentation fault" in cause.message
    # -v shows the crashed replica's stacks
    assert "The crashed replica's stacks" in render(report, verbose=True)


def test_a_list_indexed_by_a_device_tensor_is_one_read_per_step(runs: dict[str, Any]) -> None:
    report = runs["list"]
    assert report.error is None, report.error_detail
    transfers = report.checks["transfers"]
    assert transfers.details["per_step_per_core"] == 1.0
    reads = [c for c in report.causes if c.kind == "host_read" and c.severity == "warn"]
    assert len(reads) == 1
    assert str(reads[0].location) == f"{WHERE}/list_index.py:26"
    assert "`index` reads a value back to the host 1 time per step per core" in reads[0].message


def test_a_tensor_used_as_a_size_is_read_at_its_line(runs: dict[str, Any]) -> None:
    report = runs["size"]
    assert report.error is None, report.error_detail
    reads = [c for c in report.causes if c.kind == "host_read" and c.severity == "warn"]
    assert [str(c.location) for c in reads] == [f"{WHERE}/list_index.py:48"]
    assert reads[0].message.startswith("`zeros (a tensor as a number)` reads a value back")
    assert report.checks["transfers"].details["per_step_per_core"] == 1.0
    # counted once: nothing is left unattributed in the steady window
    assert not [
        c for c in report.causes if c.kind == "unattributed_transfers" and c.severity != "info"
    ]


def test_nearest_upsampling_is_an_emulation_only_fallback(runs: dict[str, Any]) -> None:
    report = runs["upsample"]
    assert report.error is None, report.error_detail
    assert report.verdict == "pass", report.summary
    check = report.checks["cpu_fallbacks"]
    assert check.status == "pass"
    assert (
        "1 emulation-only fallback (upsample_nearest2d_backward): a TPU lowers it" in check.summary
    )
    cause = _cause(report, "emulation_only_fallback")
    assert cause.severity == "info"
    assert "torch_xla/csrc/aten_xla_type.cpp:4021 checks the device type" in cause.message
    assert str(cause.location) == f"{WHERE}/upsampling.py:27"
    # its round trips are not counted as the TPU's transfers either
    assert report.checks["transfers"].status == "pass"


def test_special_functions_get_their_own_advice(runs: dict[str, Any]) -> None:
    report = runs["gamma"]
    (cause,) = report.causes_for("cpu_fallbacks")
    assert cause.message.startswith("`digamma`, `lgamma` (a log-gamma or digamma special function)")
    assert "Stirling series" in cause.message
    assert "sort/topk" not in cause.message  # the median advice is for median
    assert str(cause.location) == f"{WHERE}/op_advice.py:43"


def test_fallbacks_at_two_lines_are_summarised_each_at_its_own(runs: dict[str, Any]) -> None:
    """The check's line (and the verdict's) puts each op at its line, never every op at the
    first cause's line (NHITS's unfold and 1-D interpolation were both put at the unfold)."""
    report = runs["two_lines"]
    places = {str(c.location) for c in report.causes_for("cpu_fallbacks") if c.severity == "fail"}
    assert places == {f"{WHERE}/op_advice.py:80", f"{WHERE}/op_advice.py:81"}
    summary = report.checks["cpu_fallbacks"].summary
    assert f"lgamma at {WHERE}/op_advice.py:80" in summary, summary
    assert f"scatter_reduce.two at {WHERE}/op_advice.py:81" in summary, summary
    assert ") at " not in summary  # not the one-line form "(a, b, c) at <first line>"


def test_a_fallback_in_a_validation_runs_end_is_once_per_run(runs: dict[str, Any]) -> None:
    """A metric's compute() at the end of each validation run (torch_uncertainty's calibration
    error: torch.bucketize) is recorded with the run's last batch; with two batches per core
    that was "1 of the last 2 batches" and a FAIL "every batch"."""
    report = runs["epoch_end"]
    assert report.verdict == "pass", report.summary
    (cause,) = [c for c in report.causes_for("validation") if c.kind == "cpu_fallback"]
    assert cause.severity == "warn"
    assert "`bucketize.Tensor`" in cause.message
    assert "once per validation run, at its end" in cause.message
    assert "every batch" not in report.checks["validation"].summary


def test_scatter_reduce_without_include_self_names_the_argument(runs: dict[str, Any]) -> None:
    (cause,) = runs["scatter"].causes_for("cpu_fallbacks")
    assert "`scatter_reduce.two`" in cause.message
    assert "include_self=True (torch_xla/csrc/aten_xla_type.cpp:3477-3479)" in cause.message
    assert "pass include_self=True and start from the reduction's identity" in cause.message


def test_torchmetrics_validation_is_named_with_its_fix(runs: dict[str, Any]) -> None:
    report = runs["accuracy"]
    assert report.error is None, report.error_detail
    cause = _cause(report, "data_dependent_shape")
    assert str(cause.location) == f"{WHERE}/op_advice.py:51"
    assert "torchmetrics" in cause.message and "validate_args=False" in cause.message
    # used on the host: a host round trip per step, not a stream of graphs
    assert cause.severity == "warn" and "computed on the host every step and used there" in (
        cause.message
    )
    read = next(c for c in report.causes if c.kind == "host_read" and c.severity == "warn")
    assert "torchmetrics validates the metric's arguments on every call" in read.message


def test_a_lightning_1_hook_is_named_with_its_replacement(
    runs: dict[str, Any], layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = runs["legacy"]
    cause = _cause(report, "legacy_hook")
    assert str(cause.location) == f"{WHERE}/op_advice.py:70"  # def training_epoch_end
    assert "rename it `on_train_epoch_end(self)`" in cause.message

    # `tpulint verify -v` prints that run's traceback: the command line over the report of the
    # run above (training the module a second time, in a subprocess, took a verify run per
    # layout; the real entry point is run by the other runtime tests).
    asked: dict[str, Any] = {}

    def same_run(target_: str, **options: Any) -> VerifyReport:
        asked.update(options, target=target_)
        return report

    monkeypatch.setattr(api, "verify", same_run)
    verbose = CliRunner().invoke(
        verify_command, [target(RUNS["legacy"]), "-v", *emulate_args(layout)]
    )
    assert asked["target"] == target(RUNS["legacy"]) and asked["emulate"] == emulate(layout)
    assert verbose.exit_code == 1, verbose.output
    assert "Traceback of the replica that raised" in verbose.stdout
    assert "configuration_validator.py" in verbose.stdout


def test_ddp_gather_is_reported_by_verify(runs: dict[str, Any]) -> None:
    report = runs["gather"]
    assert report.error is None, report.error_detail
    assert report.verdict == "fail"
    check = report.checks["distributed"]
    assert check.status == "fail"
    cause = _cause(report, "collective_skipped")
    assert str(cause.location) == f"{WHERE}/ddp_code.py:33"
    assert "torch.distributed is not initialised under Lightning's XLA strategy" in cause.message
    assert "this runs as a single process on each core" in cause.message
    assert "`self.all_gather(tensor)`" in cause.message
    assert "TPU505" in cause.codes


def test_ddp_gather_is_reported_by_check(checked: subprocess.CompletedProcess[str]) -> None:
    """The same module's guard, found by `tpulint check` (static: once, not per layout; the
    test above is verify's finding in each layout)."""
    found = json.loads(checked.stdout)["diagnostics"]
    (guard,) = [d for d in found if d["code"] == "TPU505"]  # one problem, one finding
    assert guard["start"]["line"] == 33  # the guard; what it guards never runs on TPU cores
    assert "the else branch runs instead (`keys = key`)" in guard["message"]
    # the world size, the gather, the rank: its related places
    assert [r["start"]["line"] for r in guard["related"]] == [34, 35, 36]


def test_an_iterable_dataset_sharded_by_torch_distributed_fails(runs: dict[str, Any]) -> None:
    report = runs["stream"]
    assert report.error is None, report.error_detail
    sharding = report.checks["sharding"]
    assert sharding.status == "fail"
    cause = _cause(report, "same_data_everywhere")
    assert cause.message.startswith("every core trains on the same data")
    assert "asks torch.distributed for its rank here" in cause.message
    assert str(cause.location) == f"{WHERE}/ddp_code.py:56"


def test_a_module_using_what_verify_overrides_passes(runs: dict[str, Any]) -> None:
    report = runs["objects"]
    assert report.error is None, report.error_detail
    assert report.verdict == "pass", report.summary
    assert report.run["status"] == "finished"
    # what the module read in on_validation_epoch_end: the checkpoint callback's best path,
    # the early-stopping callback, the progress bar (printed through the stand-in bar)
    assert "best so far:" in report.log and "patience 3" in report.log
    overridden = {o["name"]: o for o in report.trainer["overridden"]}
    assert overridden["logger"]["used"] == "<tpulint stand-in logger>"
    assert "writes nothing" in overridden["logger"]["reason"]
    assert overridden["default_root_dir"]["requested"] == str(runs["tmp"] / "root")
    # kept as asked: checkpointing (no file written) and the progress bar (silent)
    assert "enable_checkpointing" not in overridden and "enable_progress_bar" not in overridden
    assert not (runs["tmp"] / "root").exists()  # nothing written where the user pointed
    header = render(report).splitlines()[2:8]
    assert any("logger=True -> tpulint stand-in logger" in line for line in header)
