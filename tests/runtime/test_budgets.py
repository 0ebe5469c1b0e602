"""Budgets follow what is observed (monitor.py): --timeout counts until the first step, then
again from there; a run still stepping when it runs out is too slow, not hung; a compilation
in progress is "still compiling"; no step for a long time is hung. And what only a TPU shows,
a libtpu lock file left behind, a recorded run's uneven loaders. Synthetic records, no torch."""

from __future__ import annotations

from pathlib import Path

from tpulint.runtime.events import EventLog
from tpulint.runtime.judge.attribution import RuleIndex
from tpulint.runtime.judge.context import Context
from tpulint.runtime.judge.hardware import EMULATED, hardware_evidence, hardware_lines
from tpulint.runtime.judge.loader_counts import uneven_loader_causes
from tpulint.runtime.libtpu import lock_status, remove_if_left_by
from tpulint.runtime.monitor import Monitor
from tpulint.runtime.recorded import report_directory
from tpulint.runtime.spec import RunSpec

COMPILE_ENTRY = (
    "Compilation Analysis: ================================================================\n"
    "Compilation Analysis: Compilation Cause\n"
    "Compilation Analysis:   user mark_step\n"
    "Compilation Analysis: Graph Info: \n"
    "Compilation Analysis:   Graph Hash: 4f3c\n"
    "Compilation Analysis: Python Frame Triggered Execution: \n"
    "Compilation Analysis:   training_step (/proj/model.py:30)\n"
    "Compilation Analysis: ----------------------------------------------------------------\n"
    "Compilation Analysis: ================================================================\n"
)
SIZES = (
    "Post Compilation Analysis: ===========================================================\n"
    "Post Compilation Analysis: Graph input size: 0.000100 GB\n"
    "Post Compilation Analysis: Graph output size: 0.000100 GB\n"
    "Post Compilation Analysis: Aliased Input size: 0.000000 GB\n"
    "Post Compilation Analysis: Intermediate tensor size: 0.500000 GB\n"
    "Post Compilation Analysis: Compiled program size: 0.000200 GB\n"
    "Post Compilation Analysis: -----------------------------------------------------------\n"
    "Post Compilation Analysis: ===========================================================\n"
)


def ctx(cores: int) -> Context:
    return Context(cores=cores, warmup=2, batch_multiple=8, cwd="/proj", rules=RuleIndex())


def _monitor(tmp_path: Path, timeout: float = 100.0) -> Monitor:
    return Monitor(RunSpec(None, run_dir=str(tmp_path), barrier_timeout=10.0), timeout, 1000.0)


def _step(log: EventLog, rank: int, step: int, seconds: float = 2.0) -> None:
    log.write(
        "step", rank=rank, step=step, epoch=0, batch_idx=step, seconds=seconds,
        graphs={"compiled": []}, ranks={}, counters={},
    )  # fmt: skip


def test_the_timeout_counts_again_from_the_first_step(tmp_path: Path) -> None:
    monitor = _monitor(tmp_path)
    log = EventLog(tmp_path)
    assert monitor.deadline() == 1100.0  # until the first step: start + --timeout
    log.write("train_start", rank=0, world_size=1, graphs={"compiled": []})
    monitor.poll(1050.0)  # training started at 1050 s, after 50 s of setup and compiling
    _step(log, 0, 0, seconds=40.0)
    monitor.poll(1090.0)
    assert monitor.deadline() == 1190.0  # the first step's compile done: --timeout again


def test_still_stepping_when_time_runs_out_is_too_slow(tmp_path: Path) -> None:
    monitor = _monitor(tmp_path)
    log = EventLog(tmp_path)
    log.write("train_start", rank=0, world_size=1, graphs={"compiled": []})
    for step in range(6):
        _step(log, 0, step, seconds=31.0 if step else 90.0)
        monitor.poll(1000.0 + 31 * (step + 1))
    ending = monitor.at_deadline(1000.0 + 31 * 6 + 5)
    assert ending.status == "too_slow"
    assert ending.detail == (
        "too slow to judge here: 31.0 s per step; raise --timeout or use a smaller configuration"
    )


def test_no_step_for_long_is_hung(tmp_path: Path) -> None:
    monitor = _monitor(tmp_path)
    log = EventLog(tmp_path)
    log.write("train_start", rank=0, world_size=1, graphs={"compiled": []})
    _step(log, 0, 0, seconds=1.0)
    monitor.poll(1001.0)
    ending = monitor.at_deadline(1400.0)
    assert ending.status == "hung" and "no core recorded a step for 399s" in ending.detail


def test_a_compilation_in_progress_is_not_a_hang(tmp_path: Path) -> None:
    monitor = _monitor(tmp_path)
    log = EventLog(tmp_path)
    log.write("train_start", rank=0, world_size=1, graphs={"compiled": []})
    monitor.poll(1001.0)
    graphs = tmp_path / "xla-graphs-0-123.txt"
    graphs.write_text(COMPILE_ENTRY)  # written before XLA compiles, its sizes after
    ending = monitor.at_deadline(1101.0)
    assert ending.status == "compiling"
    assert ending.detail.startswith("still compiling (")
    assert ending.data["entry"]["frames"] == [("/proj/model.py", 30, "training_step")]
    graphs.write_text(COMPILE_ENTRY + SIZES)
    assert monitor.at_deadline(1101.0).status != "compiling"
    # a stall while compiling is not judged from the stacks: compiling is progress
    graphs.write_text(COMPILE_ENTRY + SIZES + COMPILE_ENTRY)
    assert monitor.judge_stacks(1101.0) is None


def test_hardware_evidence_is_only_a_tpus(tmp_path: Path) -> None:
    assert hardware_evidence([], [], emulated=True) == {"available": False, "reason": EMULATED}
    sample = {
        "device_seconds": 0.25,
        "memory": {"bytes_used": 3 * 2**30, "bytes_limit": 16 * 2**30},
    }
    events = [{"kind": "step", "rank": r, "step": 2, "hardware": dict(sample)} for r in range(2)]
    evidence = hardware_evidence(events, [], emulated=False)
    assert evidence["hbm"] == {
        "0": {"peak_bytes": 3 * 2**30, "limit_bytes": 16 * 2**30},
        "1": {"peak_bytes": 3 * 2**30, "limit_bytes": 16 * 2**30},
    }
    assert evidence["device_step_seconds"]["median"] == 0.25
    lines = hardware_lines(evidence)
    assert "  HBM peak per core: 3.00 GiB to 3.00 GiB (19% of 16.00 GiB)" in lines
    assert "  device step time: 0.250s (median of 2 sampled steps)" in lines


def test_a_lock_file_left_behind(tmp_path: Path) -> None:
    lock = tmp_path / "libtpu_lockfile"
    assert lock_status(lock).line().endswith(": none")
    lock.write_text("")
    status = lock_status(lock)
    assert status.stale  # no process here has a TPU device open
    assert "left behind (no process uses the TPU)" in status.line()
    assert not remove_if_left_by(existed_before=True, path=lock)  # not ours: kept
    assert remove_if_left_by(existed_before=False, path=lock) and not lock.exists()


def test_uneven_loaders_in_a_recorded_run_fail() -> None:
    events = [
        {"kind": "loader_end", "rank": r, "stage": "train", "epoch": 0, "batches": 5 - (r >= 2)}
        for r in range(4)
    ]
    (cause,) = uneven_loader_causes(ctx(cores=4), events)
    assert cause.kind == "out_of_data" and cause.severity == "fail"
    assert cause.message.startswith(
        "a core ran out of data: in epoch 0, cores 2, 3 had 4 batches while cores 0, 1 had 5/5"
    )
    assert uneven_loader_causes(ctx(cores=4), events[:2]) == []


def test_report_of_an_empty_or_missing_folder(tmp_path: Path) -> None:
    missing = report_directory(tmp_path / "nowhere")
    assert missing.exit_code == 2 and missing.error.endswith("no such folder")
    empty = report_directory(tmp_path)
    assert empty.exit_code == 2
    assert empty.error == f"{tmp_path}: no recorded run here (no *.jsonl files from TPUReadiness)"


def test_report_of_a_run_that_did_not_finish(tmp_path: Path) -> None:
    """Cores that stopped writing: what was recorded is judged; nothing failed, so exit 2."""
    log = EventLog(tmp_path)
    log.write("recording", cwd=str(tmp_path), warmup=0)
    for rank in range(2):
        log.write("train_start", rank=rank, world_size=2, graphs={"compiled": []}, counters={})
    for step in range(2):
        for rank in range(2):
            _step(log, rank, step)
    log.write("rank_done", rank=0)
    report = report_directory(tmp_path)
    assert report.run["status"] == "unfinished"
    assert report.exit_code == 2
    assert report.error == "the run did not finish: 1 of 2 cores finished"


def test_cores_stuck_in_different_collectives_diverged(tmp_path: Path) -> None:
    """On a TPU a core that enters another collective than the others leaves every core
    waiting: no progress, and their last recorded collectives differ."""
    monitor = _monitor(tmp_path)
    log = EventLog(tmp_path)
    log.write("train_start", rank=0, world_size=3, graphs={"compiled": []})
    barrier = {"path": "/proj/model.py", "line": 18, "function": "training_step", "user": True}
    lightning = {"path": "/venv/lightning/xla.py", "line": 96, "function": "_xla_wrap_closure"}
    for rank in range(3):
        log.write("collective", rank=rank, name="all_reduce", site=lightning, shapes=[[64]])
    log.write("collective", rank=0, name="all_gather", site=barrier, shapes=[[1]])
    _step(log, 0, 0, seconds=1.0)
    monitor.poll(1001.0)
    ending = monitor.at_deadline(1400.0)
    assert ending.status == "diverged"
    assert ending.detail == "the cores waited in different collectives (all_gather, all_reduce)"
