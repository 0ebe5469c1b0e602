"""The judging rules, on synthetic child events (no torch_xla needed, milliseconds each)."""

from __future__ import annotations

import math
from array import array
from pathlib import Path
from typing import Any

import pytest
from tpulint.runtime.frames import CodeFilter
from tpulint.runtime.judge.attribution import RuleIndex
from tpulint.runtime.judge.check_compiles import check_compiles
from tpulint.runtime.judge.check_run import run_causes
from tpulint.runtime.judge.check_sharding import check_sharding
from tpulint.runtime.judge.context import Context
from tpulint.runtime.judge.graphs import follow_graphs
from tpulint.runtime.judge.steps import build_all_rows, build_rows
from tpulint.runtime.runner import RunOutcome, classify

ABORT = (
    "2026-01-01 F external/xla/xla/service/rendezvous.cc:127] [id=3] Termination timeout for"
    " `all reduce RendezvousKey{run_id=RunId: 0, op_id=14}` of 10 seconds exceeded."
)


def ctx(cores: int = 8, warmup: int = 2, **kwargs: Any) -> Context:
    return Context(
        cores=cores, warmup=warmup, batch_multiple=8, cwd="/proj", rules=RuleIndex(), **kwargs
    )


USER_FRAMES = [
    ("/venv/site-packages/torch_xla/torch_xla.py", 87, "sync"),
    ("/venv/site-packages/lightning/pytorch/plugins/precision/xla.py", 75, "optimizer_step"),
    ("/proj/model.py", 30, "training_step"),
]


def step(
    index: int,
    epoch: int,
    batch_idx: int,
    compiles: int = 0,
    batch: int = 16,
    cores: int = 8,
    shape_ops: list[dict[str, Any]] | None = None,
    compiled: tuple[str, ...] = (),
    executed: tuple[str, ...] = (),
    optimizer: bool = True,
) -> dict[str, Any]:
    """A step event; `compiled` and `executed` are graph hashes (compiles default to how many
    were compiled)."""
    bucket = {
        "batch": [[batch, 32]],
        "marker_compiles": 0,
        "optimizer_steps": 1 if optimizer else 0,
        "transfers": [],
        "shape_ops": shape_ops or [],
    }
    return {
        "kind": "step",
        "step": index,
        "epoch": epoch,
        "batch_idx": batch_idx,
        "seconds": 0.01,
        "counters": {"UncachedCompile": compiles or len(compiled), "CachedCompile": 24},
        "graphs": {
            "compiled": [{"hash": h, "cause": "", "frames": USER_FRAMES} for h in compiled],
            "executed": {h: cores for h in (*compiled, *executed)},
        },
        "ranks": {str(r): dict(bucket) for r in range(cores)},
    }


def epochs(
    count: int, per_epoch: int, extra: dict[int, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """`count` epochs of `per_epoch` steps running graphs "w0".."w2" (compiled at step 0);
    `extra` adds keyword arguments of `step()` per step index."""
    events = []
    for index in range(count * per_epoch):
        kwargs: dict[str, Any] = {"executed": ("w0", "w1", "w2")}
        if index == 0:
            kwargs["compiled"] = ("w0", "w1", "w2")
            kwargs["executed"] = ()
        kwargs.update((extra or {}).get(index, {}))
        events.append(step(index, index // per_epoch, index % per_epoch, **kwargs))
    return events


def judge(events: list[dict[str, Any]], warmup: int = 2) -> tuple[Any, list[Any]]:
    rows = build_all_rows(events, warmup)
    context = ctx(warmup=warmup, user_code=CodeFilter(["/proj"]))
    return check_compiles(context, rows["train"], events, [], follow_graphs(events, rows))


# --- how a run ended --------------------------------------------------------------------


def test_classify_outcomes() -> None:
    finished = [{"kind": "train_start"}, {"kind": "finished"}]
    assert classify(0, finished, "", False, 60)[0] == "finished"
    error = [{"kind": "error", "message": "bad target"}]
    assert classify(2, error, "", False, 60) == ("error", "bad target")
    assert classify(3, [{"kind": "train_start"}], ABORT, False, 60)[0] == "diverged"
    # the exception that started it wins over the abort that followed
    raised = [
        {"kind": "replica_error", "type": "ValueError", "message": "boom", "out_of_step": False}
    ]
    assert classify(3, raised, ABORT, False, 60) == ("raised", "ValueError: boom")
    assert classify(None, [{"kind": "train_start"}], "", True, 60)[0] == "hung"
    assert classify(None, [], "", True, 60)[0] == "error"  # watchdog before training
    out_of_step = [
        {"kind": "train_start"},
        {"kind": "replica_error", "out_of_step": True, "message": "core 1 waited"},
    ]
    assert classify(3, out_of_step, "", False, 60) == ("hung", "core 1 waited")
    status, detail = classify(-9, [{"kind": "train_start"}], "", False, 60)
    assert status == "crashed" and "SIGKILL (out of memory?)" in detail


# --- sampler sharding -------------------------------------------------------------------


def _sharding_events(
    tmp_path: Path,
    plans: dict[int, list[int]],
    total: int,
    num_replicas: int = 8,
    batch_size: int = 16,
) -> list[dict[str, Any]]:
    events = []
    for rank, indices in plans.items():
        name = f"plan-{rank}.bin"
        (tmp_path / name).write_bytes(array("q", indices).tobytes())
        events.append(
            {
                "kind": "loader_epoch",
                "rank": rank,
                "epoch": 0,
                "batches": math.ceil(len(indices) / batch_size),
                "batch_size": batch_size,
                "drop_last": False,
                "built_at": None,
                "iterable": False,
                "sampler": {
                    "class": "torch.utils.data.distributed.DistributedSampler",
                    "distributed": True,
                    "num_replicas": num_replicas,
                    "rank": rank % num_replicas,
                    "drop_last": False,
                    "built_at": None,
                },
            }
        )
        events.append(
            {
                "kind": "sampler_plan",
                "rank": rank,
                "epoch": 0,
                "file": name,
                "count": len(indices),
                "total": total,
            }
        )
    return events


def _distributed_sampler(n: int, world: int) -> dict[int, list[int]]:
    """torch's DistributedSampler without shuffling: pad by repeating, then stride."""
    indices = list(range(n))
    size = math.ceil(n / world) * world
    indices += indices[: size - n]
    return {rank: indices[rank:size:world] for rank in range(world)}


def test_sampler_padding_is_allowed(tmp_path: Path) -> None:
    plans = _distributed_sampler(1001, 8)  # 126 each, 7 indices repeated
    check, causes, epochs = check_sharding(
        ctx(), [], _sharding_events(tmp_path, plans, 1001), tmp_path
    )
    assert check.status == "pass", causes
    assert (epochs[0].shared, epochs[0].allowed_padding, epochs[0].missing) == (7, 7, 0)


def test_overlap_beyond_padding_fails(tmp_path: Path) -> None:
    plans = _distributed_sampler(1024, 8)
    plans[1] = plans[0]  # two cores on the same shard
    check, causes, _ = check_sharding(ctx(), [], _sharding_events(tmp_path, plans, 1024), tmp_path)
    assert check.status == "fail"
    assert [c.kind for c in causes] == ["overlapping_shards", "incomplete_coverage"]


def test_unequal_batch_counts_fail(tmp_path: Path) -> None:
    plans = {rank: list(range(rank * 64, rank * 64 + 64)) for rank in range(8)}
    plans[7] = plans[7][:40]  # a hand-made shard: fewer batches on core 7
    check, causes, _ = check_sharding(ctx(), [], _sharding_events(tmp_path, plans, 512), tmp_path)
    assert check.status == "fail"
    assert "unequal_batches" in [c.kind for c in causes]


def test_wrong_num_replicas_is_named(tmp_path: Path) -> None:
    plans = {rank: list(range(128)) for rank in range(8)}
    events = _sharding_events(tmp_path, plans, 128, num_replicas=1)
    check, causes, _ = check_sharding(ctx(), [], events, tmp_path)
    assert check.status == "fail"
    assert [c.kind for c in causes] == ["user_sampler"]
    assert "num_replicas=1, rank=0 on 8 cores of 8" in causes[0].message


# --- compile stability ------------------------------------------------------------------


def test_phases() -> None:
    events = [step(i, i // 4, i % 4, batch=5 if i % 4 == 3 else 16) for i in range(8)]
    assert [r.phase for r in build_rows(events, warmup=2)] == [
        "warmup",
        "warmup",
        "steady",
        "ragged",
        "epoch_start",
        "steady",
        "steady",
        "ragged",
    ]


def test_one_time_compiles_before_a_clean_window_pass() -> None:
    # 3 epochs of 4: a ragged last batch (compiled once at step 3, reused at 7 and 11) and
    # the first epoch boundary (compiled at step 4, reused at step 8).
    ragged = {"batch": 5, "executed": ("r",)}
    events = epochs(
        3,
        4,
        {
            3: {"batch": 5, "compiled": ("r",)},
            4: {"compiled": ("b",)},
            7: ragged,
            8: {"executed": ("b",)},
            11: ragged,
        },
    )
    check, causes = judge(events)
    assert check.status == "warn", causes  # the ragged batch: the drop_last hint
    assert {c.kind: c.severity for c in causes} == {
        "ragged_last_batch": "warn",
        "epoch_boundary": "info",
    }
    assert check.details["window"] == {"epochs": [2], "steps": [8, 11], "min_steps": 3}
    assert check.details["graphs_in_window"] == 0
    assert check.details["graphs_one_time"] == 2
    assert check.summary.startswith("stable: no new graph in the final 4 steps (epoch 2)")


def test_new_graphs_in_the_window_fail_at_the_users_line() -> None:
    events = epochs(3, 4, {i: {"compiled": (f"n{i}",)} for i in range(2, 12)})
    check, causes = judge(events)
    assert check.status == "fail"
    (cause,) = [c for c in causes if c.severity == "fail"]
    assert cause.kind == "new_graphs_in_window"
    assert cause.steps == [8, 9, 10, 11]
    assert str(cause.location) == "model.py:30"
    assert "through `optimizer_step`" in cause.message
    assert check.summary.startswith("4 new graphs in the final steady window; new graphs keep")


def test_racing_compiles_of_one_graph_are_one_graph() -> None:
    events = epochs(3, 4)
    events[0]["graphs"]["compiled"] *= 8  # eight replica threads compiled each graph
    check, _ = judge(events)
    assert check.status == "pass"
    assert check.details["graphs_warmup"] == 3
    assert check.details["duplicate_compiles"] == 21


def test_gradient_accumulation_compiles_are_one_time() -> None:
    # The optimizer steps every 4th batch: its graphs first compile at step 3, after warm-up.
    extra: dict[int, dict[str, Any]] = {
        i: {"optimizer": i % 4 == 3, "executed": ("w0",)} for i in range(24)
    }
    extra[2] = {"optimizer": False, "compiled": ("acc",)}
    extra[3] = {"optimizer": True, "compiled": ("opt",)}
    for i in range(7, 24, 4):
        extra[i] = {"optimizer": True, "executed": ("opt", "acc")}
    check, causes = judge(epochs(3, 8, extra))
    assert check.status == "pass", causes
    (cause,) = causes
    assert (cause.kind, cause.severity, cause.steps) == ("gradient_accumulation", "info", [2, 3])
    assert "2 once for gradient accumulation (step 2..3)" in check.summary


def test_a_graph_change_passes_with_a_warning_and_no_guess_at_its_cause() -> None:
    # From epoch 1, step 5 on, the step runs a new graph "p" (and stays on it). Without the
    # graphs' HLO nothing says what changed: no "phase switch" is claimed.
    extra = {i: {"executed": ("p",)} for i in range(6, 12)}
    extra[5] = {"compiled": ("p",)}
    check, causes = judge(epochs(3, 4, extra))
    assert check.status == "warn"
    (cause,) = causes
    assert (cause.kind, cause.severity, cause.steps) == ("graph_change", "warn", [5])
    assert "changed after they had been steady, and the new ones stayed" in cause.message
    assert "phase switch" not in cause.message


def test_the_step_settling_right_after_warmup_is_one_time() -> None:
    extra = {i: {"executed": ("s",)} for i in range(3, 12)}
    extra[2] = {"compiled": ("s",)}
    check, causes = judge(epochs(3, 4, extra))
    assert check.status == "pass"
    assert [(c.kind, c.severity) for c in causes] == [("settling", "info")]


def test_too_few_steps_is_not_judged() -> None:
    check, _ = judge(epochs(1, 4))  # 2 steps after warm-up: no window of 3
    assert check.status == "skipped"
    assert check.summary.startswith("not judged: 2 training steps after the 2 warm-up steps")


def test_varying_shape_fails_even_without_late_compiles() -> None:
    site = {"path": "/proj/model.py", "line": 12, "function": "training_step", "user": True}
    events = [
        step(
            i,
            0,
            i,
            3 if i == 0 else 0,
            shape_ops=[
                {"site": site, "kind": "boolean_mask", "count": 1, "shapes": [f"{9 + i % 3}x4"]}
            ],
        )
        for i in range(6)
    ]
    check, causes = check_compiles(ctx(), build_rows(events, 2), events, [])
    assert check.status == "fail"
    (cause,) = causes
    assert cause.kind == "data_dependent_shape"
    assert str(cause.location) == "model.py:12"
    assert "(9..11 seen across 8 cores and 6 steps)" in cause.message


# --- runs that did not finish -----------------------------------------------------------


def test_diverged_names_the_collective_and_shapes() -> None:
    site = {"path": "/proj/model.py", "line": 30, "function": "training_step", "user": True}
    events = [
        {
            "kind": "collective",
            "rank": r,
            "name": "all_gather",
            "site": site,
            "shapes": [[r % 2 + 1]],
        }
        for r in range(4)
    ]
    outcome = RunOutcome("diverged", "XLA aborted", -6, events, ABORT, 30.0)
    (cause,) = run_causes(ctx(cores=4), outcome, build_rows([step(0, 0, 0, cores=4)], 2))
    assert cause.kind == "diverged_replicas" and str(cause.location) == "model.py:30"
    assert (
        "([[1]] on cores 0, 2 at model.py:30; [[2]] on cores 1, 3 at model.py:30)" in cause.message
    )
    assert cause.steps == [1]


def test_hang_stacks_name_the_user_line(tmp_path: Path) -> None:
    user = tmp_path / "model.py"
    user.write_text("")
    log = (
        "Thread 0x00007f01 (most recent call first):\n"
        '  File "/usr/lib/python3.11/threading.py", line 320 in wait\n'
        f'  File "{user}", line 22 in training_step\n'
        '  File "/venv/site-packages/lightning/pytorch/core/module.py", line 10 in step\n'
        "\n"
        "Current thread 0x00007f02 (most recent call first):\n"
        '  File "/usr/lib/python3.11/selectors.py", line 415 in select\n'
    )
    waiting = [
        {
            "kind": "replica_error",
            "rank": r,
            "out_of_step": True,
            "message": "",
            "waited_at": "a step marker (torch_xla.sync)",
            "site": None,
        }
        for r in (1, 2, 3)
    ]
    outcome = RunOutcome("hung", "no progress within 40s", None, waiting, log, 40.0, True)
    context = ctx(cores=4, user_code=CodeFilter([str(tmp_path)]))
    (cause,) = run_causes(context, outcome, [])
    assert cause.location is not None and cause.location.line == 22
    assert "core 0 never finished it (blocked at this line in training_step())" in cause.message
    assert "cores 1, 2, 3 waited at a step marker (torch_xla.sync)" in cause.message


def test_watchdog_stacks_say_where_each_core_was(tmp_path: Path) -> None:
    user = tmp_path / "model.py"
    user.write_text("")
    log = "".join(
        f"Thread 0x{0x7F00 + rank:016x} (most recent call first):\n"
        + (
            f'  File "{user}", line 22 in training_step\n'
            if rank == 2
            else '  File "/venv/site-packages/torch_xla/core/xla_model.py", line 9 in all_reduce\n'
            '  File "/venv/site-packages/lightning/pytorch/plugins/precision/xla.py", line 96'
            " in _xla_wrap_closure\n"
        )
        + "\n"
        for rank in range(4)
    )
    threads = [{"kind": "replica_thread", "rank": r, "ident": 0x7F00 + r} for r in range(4)]
    outcome = RunOutcome("hung", "no progress within 40s", None, threads, log, 40.0, True)
    context = ctx(cores=4, user_code=CodeFilter([str(tmp_path)]))
    (cause,) = run_causes(context, outcome, [])
    assert f"core 2 was at {user}:22 (training_step)" in cause.message
    assert (
        "cores 0, 1, 3 were at lightning/pytorch/plugins/precision/xla.py:96 (_xla_wrap_closure)"
        in cause.message
    )


# --- which frames are the user's ---------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "user"),
    [
        ("/proj/model.py", True),
        ("/proj/pkg/data.py", True),
        ("/proj/.venv/lib/python3.11/site-packages/lightning/pytorch/trainer.py", False),
        ("/elsewhere/model.py", False),
        ("<string>", False),
    ],
)
def test_code_filter(path: str, user: bool) -> None:
    assert CodeFilter(["/proj"]).is_user(path) is user


def test_code_filter_installed_package_under_test() -> None:
    # A target inside an installed package does not make installed code the user's.
    root = "/venv/lib/python3.11/site-packages/mypkg"
    assert not CodeFilter([root]).is_user(f"{root}/model.py")
    assert not CodeFilter([root]).is_user("/venv/lib/python3.11/site-packages/torch/nn.py")
    assert not CodeFilter(["/proj"]).is_user("/proj/.venv/lib/python3.11/dist-packages/x.py")


def test_hang_snapshot_names_the_stuck_core_without_a_dump() -> None:
    site = {"path": "/proj/model.py", "line": 22, "function": "training_step", "user": True}
    waiting = [
        {
            "kind": "replica_error",
            "rank": r,
            "out_of_step": True,
            "message": "",
            "site": None,
            "waited_at": "the end of step 1",
            "elsewhere": [{"rank": 2, "site": site}],
        }
        for r in (0, 1, 3)
    ]
    outcome = RunOutcome("hung", "core 0 waited 10s", 3, waiting, "no stacks here", 25.0)
    (cause,) = run_causes(ctx(cores=4), outcome, [])
    assert str(cause.location) == "model.py:22"
    assert cause.cores == [2]
    assert "core 2 never finished it" in cause.message
    assert "cores 0, 1, 3 waited at the end of step 1" in cause.message


def test_the_users_exception_is_the_root_cause() -> None:
    user = {"path": "/proj/model.py", "line": 16, "function": "training_step", "user": True}
    events = [
        {
            "kind": "replica_error",
            "time": 1.0,
            "rank": 1,
            "type": "RuntimeError",
            "message": "INTERNAL ASSERT FAILED",
            "out_of_step": False,
            "site": None,
        },
        {
            "kind": "replica_error",
            "time": 2.0,
            "rank": 3,
            "type": "ValueError",
            "message": "bad batch",
            "out_of_step": False,
            "site": user,
        },
        {
            "kind": "replica_error",
            "time": 3.0,
            "rank": 0,
            "out_of_step": True,
            "released": True,
            "message": "core 0 stopped waiting at the end of step 1: another core failed",
        },
    ]
    assert classify(3, events, ABORT, False, 60) == ("raised", "ValueError: bad batch")
    outcome = RunOutcome("raised", "ValueError: bad batch", 3, events, ABORT, 20.0)
    (cause,) = run_causes(ctx(), outcome, [])
    assert cause.kind == "exception" and str(cause.location) == "model.py:16"
    assert cause.message == "training raised ValueError: bad batch on core 3"
