"""Fast tests of the judge's rules for where the cores' rows put work that is not the step's:
the end of an epoch (its bookkeeping lands in the slowest core's last row or the next epoch's
first rows when cores share a process), the emulation's own graphs (the process layout's
host-side collectives), and an op that is another op's gradient (digamma in lgamma's
backward). The runtime suite runs them on real modules (test_judgement.py, test_causes.py)."""

from __future__ import annotations

from pathlib import Path

from tpulint.runtime import frames
from tpulint.runtime.judge.check_compiles import _at_epoch_edge
from tpulint.runtime.judge.check_transfers import (
    _once_per_loop,
    unexplained_by_step,
    window_excess,
)
from tpulint.runtime.judge.graph_causes import _emulation_only
from tpulint.runtime.judge.graph_diff import HloModule, Instruction
from tpulint.runtime.judge.report import StepRow
from tpulint.runtime.xla_ops import gradient_of, runs_in_backward

# Where tpulint's runtime is installed: its frames are the emulation's.
RUNTIME = Path(frames.__file__).resolve().parent


def _rows(epochs: int, steps: int) -> list[StepRow]:
    return [
        StepRow(
            step=epoch * steps + index,
            epoch=epoch,
            batch_idx=index,
            phase="steady",
            uncached_compiles=0,
            cached_executions=0,
            transfers=0,
            host_ops=0,
            seconds=0.0,
            batch_size=16,
        )
        for epoch in range(epochs)
        for index in range(steps)
    ]


def test_the_epoch_edges_are_the_last_step_and_the_next_epochs_first_two() -> None:
    rows = _rows(3, 4)
    edges = [row.step for row in rows if _at_epoch_edge(row, rows)]
    # not step 0 (the run's start), not step 11 (no epoch follows: the run's end)
    assert edges == [3, 4, 5, 7, 8, 9]


def test_reads_at_both_ends_of_long_epochs_are_bookkeeping() -> None:
    four = [{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}]
    assert _once_per_loop({3, 4, 7, 8}, four)  # split between a last row and a first
    assert _once_per_loop({4, 8}, four)
    assert not _once_per_loop({4, 6}, four)  # mid-epoch: a per-step cost
    two = [{0, 1}, {2, 3}]
    # in epochs of two steps both ends are every step
    assert not _once_per_loop({0, 1, 2, 3}, two)
    assert _once_per_loop({1, 3}, two)


def _module(*paths: str | None) -> HloModule:
    instructions = [
        Instruction("add", "aten__add", path, 1 if path else None, "f32[4]", "", "")
        for path in paths
    ]
    return HloModule("m.txt", 0, 0.0, ["f32[4]"], instructions)


def test_graphs_of_the_emulation_alone_are_left_out_of_the_diff() -> None:
    bridge = str(RUNTIME / "child" / "tracing.py")
    assert _emulation_only(_module(bridge, None, bridge))
    assert not _emulation_only(_module(bridge, "/home/user/model.py"))
    assert not _emulation_only(_module(None))  # no line at all: nothing says whose


def test_digamma_is_placed_at_lgamma_as_its_gradient() -> None:
    assert gradient_of("aten::digamma", "lgamma")
    assert gradient_of("aten::digamma", "gammaln")
    assert gradient_of("aten::polygamma", "digamma")
    assert not gradient_of("aten::digamma", "digamma")  # its own call: a forward op
    assert not gradient_of("aten::lgamma", "lgamma")
    assert not runs_in_backward("aten::digamma")  # also a function of its own


def _counted(*transfers: int) -> list[StepRow]:
    rows = _rows(1, len(transfers))
    for row, count in zip(rows, transfers, strict=True):
        row.transfers = count
    return rows


def test_a_read_counted_a_row_early_is_not_unexplained() -> None:
    # 8 cores, one `.item()` each per step; a core into step 2 before step 1's read
    traced = {step: 8 for step in range(4)}
    assert unexplained_by_step(_counted(8, 9, 7, 8), traced) == {}
    # three cores early at step 1, paid back at step 2
    assert unexplained_by_step(_counted(8, 11, 5, 8), traced) == {}


def test_reads_no_python_call_made_stay_at_their_steps() -> None:
    traced = {step: 8 for step in range(5)}
    assert unexplained_by_step(_counted(9, 9, 9, 9, 9), traced) == {s: 1 for s in range(5)}
    assert unexplained_by_step(_counted(8, 8, 10, 8, 8), traced) == {2: 2}
    # a core's read a row early, and a one-off later: only the one-off is left
    assert unexplained_by_step(_counted(8, 9, 7, 9, 8), traced) == {3: 1}


def test_a_window_of_shared_processes_is_judged_as_a_whole() -> None:
    traced = {step: 8 for step in range(6)}
    epoch = [set(range(6))]
    # the epoch's bookkeeping split between its ends, cores into the next step early
    assert window_excess(_counted(6, 7, 9, 10, 9, 15), traced, 8, epoch) == 0
    assert window_excess(_counted(40, 8, 8, 8, 8, 30), traced, 8, epoch) == 0
    # one read per step per core no Python call made, through the same noise
    assert window_excess(_counted(15, 16, 17, 18, 16, 20), traced, 8, epoch) > 0
    # two reads per step no Python call made (a host-side nonzero) in a short window
    assert window_excess(_counted(24, 24, 24, 24), traced, 8, [set(range(4))]) == 64
    # on a v2 or v3 (two cores per process) half a row's reads can be early: 4 rows of 8
    # extra reads, more than that, scaled back to the 6 rows
    assert window_excess(_counted(*[16] * 6), traced, 2, epoch) == 48
    assert window_excess(_counted(8, 8, 8, 11, 8, 8), traced, 2, epoch) == 0
