"""What crosses processes, with real processes (no torch needed, a second or two each): the
board every process maps (a core out of data is caught whichever processes the cores live
in), the per-core event files several processes append to at once, and the parent's
end-of-epoch decision every core waits for. The layouts these serve (a TPU VM's processes,
and `--emulate`) are exercised end to end by the runtime suite's verdict tests."""

from __future__ import annotations

import json
import multiprocessing
import threading
import time
from pathlib import Path
from typing import Any

from tpulint.runtime.child.board import NOT_ENDED, Board
from tpulint.runtime.child.recorder import wait_for_decision
from tpulint.runtime.events import EventLog, EventTail, read_events
from tpulint.runtime.monitor import Monitor
from tpulint.runtime.spec import RunSpec

FORK = multiprocessing.get_context("fork")


def _core(board: Board, rank: int, batches: int, results: Any, delay: float) -> None:
    """One core iterating its loader for epoch 0: fetch, then the end."""
    found: dict[str, Any] = {}
    for index in range(batches):
        time.sleep(delay)
        short = board.fetched(rank, "train", 0, index)
        if short:
            found["fetch"] = (index, short)
            break
    else:
        longer = board.ended(rank, "train", 0, batches)
        if longer:
            found["end"] = longer
    results.put((rank, found))


def _run(board: Board, plan: dict[int, int]) -> dict[int, Any]:
    results = FORK.Queue()
    processes = [
        FORK.Process(target=_core, args=(board, rank, count, results, 0.0))
        for rank, count in plan.items()
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(30)
    return dict(results.get(timeout=5) for _ in processes)


def test_a_core_out_of_data_is_caught_across_processes(tmp_path: Path) -> None:
    board = Board.create(tmp_path, 4)  # mapped before the fork, as the verify child does
    # cores 2 and 3 (two processes) end their epoch after four batches ...
    assert _run(board, {2: 4, 3: 4}) == {2: {}, 3: {}}
    # ... then cores 0 and 1, in two other processes, get a fifth
    found = _run(board, {0: 5, 1: 5})
    assert found[0] == {"fetch": (4, {2: 4, 3: 4})}
    assert found[1] == {"fetch": (4, {2: 4, 3: 4})}


def test_the_short_core_sees_the_longer_ones(tmp_path: Path) -> None:
    board = Board.create(tmp_path, 3)
    assert _run(board, {0: 3, 1: 3}) == {0: {}, 1: {}}
    assert _run(board, {2: 2}) == {2: {"end": {0: 3, 1: 3}}}


def test_either_order_is_caught(tmp_path: Path) -> None:
    """The short core ending after the long core fetched past it is caught too."""
    board = Board.create(tmp_path, 2)
    assert board.fetched(0, "train", 3, 0) == {}
    assert board.fetched(0, "train", 3, 1) == {}
    assert board.ended(1, "train", 3, 1) == {0: 2}  # core 0 got a second batch
    assert board.ended(0, "validate", 0, 2) == {}  # another loader: nothing to compare


def _fetching(board: Board, batches: int) -> None:
    for index in range(batches):
        board.fetched(1, "train", 0, index % 1000)


def test_an_entry_being_written_is_never_read_half_written(tmp_path: Path) -> None:
    """A core posts a fetch for every batch while the others read its entry from other
    processes: a reader must see one whole write or another, never a count of 0 or an end
    that nobody wrote (which would be a core "out of data after 0 batches")."""
    board = Board.create(tmp_path, 2)
    board.fetched(1, "train", 0, 0)
    writer = FORK.Process(target=_fetching, args=(board, 100_000))
    writer.start()
    seen, torn = 0, []
    while writer.is_alive():
        entry = board._read(1, "train", 0)
        seen += 1
        if entry is None or entry[0] < 1 or entry[1] != NOT_ENDED:
            torn.append(entry)
    writer.join(30)
    assert writer.exitcode == 0
    assert seen > 1000  # the reads overlapped the writes
    assert torn == []


def _writer(directory: Path, ranks: list[int], rows: int) -> None:
    log = EventLog(directory)
    local = threading.local()
    log.rank_of = lambda: getattr(local, "rank", None)

    def write(rank: int) -> None:
        local.rank = rank
        for step in range(rows):
            log.write("step", step=step, payload="x" * 3000)

    threads = [threading.Thread(target=write, args=(rank,)) for rank in ranks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    log.write("process_note")


def test_every_core_writes_its_own_file(tmp_path: Path) -> None:
    processes = [
        FORK.Process(target=_writer, args=(tmp_path, [2 * p, 2 * p + 1], 50)) for p in range(3)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(30)
    names = sorted(p.name for p in tmp_path.glob("*.jsonl"))
    assert [n for n in names if n.startswith("rank-")] == [f"rank-{r:05d}.jsonl" for r in range(6)]
    assert len([n for n in names if n.startswith("process-")]) == 3
    events = read_events(tmp_path)
    steps = [e for e in events if e["kind"] == "step"]
    assert len(steps) == 6 * 50  # every line whole, none lost
    assert {(e["rank"], e["step"]) for e in steps} == {(r, s) for r in range(6) for s in range(50)}


def _waiting_core(directory: Path, rank: int, epoch: int) -> None:
    log = EventLog(directory)
    log.write("epoch_end", rank=rank, epoch=epoch)
    decision = wait_for_decision(directory / "decisions", epoch)
    log.write("decided", rank=rank, extend=decision["extend"])


def test_the_parent_decides_once_every_core_reached_the_end(tmp_path: Path) -> None:
    (tmp_path / "decisions").mkdir()
    spec = RunSpec(None, run_dir=str(tmp_path), warmup=0)
    monitor = Monitor(spec, timeout=600.0, started=time.monotonic())
    log = EventLog(tmp_path)
    log.write("train_start", rank=0, world_size=2, graphs={"compiled": []})
    for step in range(2):  # one epoch of two steps: too short for a steady window
        for rank in range(2):
            log.write(
                "step", rank=rank, step=step, epoch=0, batch_idx=step, seconds=0.01,
                graphs={"compiled": []}, ranks={},
            )  # fmt: skip
    cores = [FORK.Process(target=_waiting_core, args=(tmp_path, r, 0)) for r in range(2)]
    for core in cores:
        core.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(core.is_alive() for core in cores):
        monitor.poll(time.monotonic())
        time.sleep(0.05)
    for core in cores:
        core.join(5)
    decision = json.loads((tmp_path / "decisions" / "epoch-0.json").read_text())
    assert decision == {"extend": True}
    decided = [e for e in EventTail(tmp_path).take() if e["kind"] == "decided"]
    assert sorted((e["rank"], e["extend"]) for e in decided) == [(0, True), (1, True)]
    extend = [e for e in read_events(tmp_path) if e["kind"] == "extend"]
    assert extend and extend[0]["reason"] == "too_short"
