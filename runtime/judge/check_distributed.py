"""torch.distributed under Lightning's XLA strategy: the user's calls, at their lines.

Lightning's XLA strategy never initialises torch.distributed (it communicates through
torch_xla: lightning/pytorch/strategies/xla.py), so DDP code asking torch.distributed runs as
a single process on each core (child/distributed.py records the calls). A guard
(`if dist.is_initialized():`) that skips a collective changes the training itself (a
contrastive loss sees only its own core's negatives, a metric is not synced): a failure. A
guard around anything else, or a rank asked for a log line, is a warning. The check exists
only for runs whose code asked torch.distributed. Parent process only; standard library only.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path
from typing import Any

from tpulint.runtime.judge.context import Context, plural, status_of
from tpulint.runtime.judge.report import Cause, Check

from tpulint.datatypes.torch_distributed import COLLECTIVES as _COLLECTIVES

# What Lightning gives a LightningModule instead.
_INSTEAD = {
    "all_gather": "`self.all_gather(tensor)` (stacks every core's tensor on a new first"
    " dimension; `sync_grads=True` keeps the gradient)",
    "all_reduce": "`self.all_gather(tensor).sum(0)` (or `self.trainer.strategy.reduce`)",
    "get_rank": "`self.trainer.global_rank` (in a Dataset: `torch_xla.runtime.global_ordinal()`)",
    "get_world_size": "`self.trainer.world_size` (in a Dataset: `torch_xla.runtime.world_size()`)",
    "barrier": "`self.trainer.strategy.barrier()`",
    "broadcast": "`self.trainer.strategy.broadcast(obj)`",
}


@lru_cache(maxsize=32)
def _tree(path: str) -> ast.Module | None:
    try:
        return ast.parse(Path(path).read_text(encoding="utf-8"), path)
    except (OSError, SyntaxError, ValueError):
        return None


def guarded_collectives(path: str, line: int) -> list[str]:
    """The torch.distributed collectives an `if` at `line` runs only when its test holds."""
    tree = _tree(path)
    if tree is None:
        return []
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.IfExp)) and node.lineno <= line <= (
            getattr(node.test, "end_lineno", node.lineno) or node.lineno
        ):
            body = node.body if isinstance(node, ast.If) else [node.body]
            found = []
            for statement in body:
                for call in ast.walk(statement):
                    if isinstance(call, ast.Call):
                        name = _name(call.func)
                        if name in _COLLECTIVES:
                            found.append(name)
            return sorted(set(found))
    return []


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def check_distributed(
    ctx: Context, events: list[dict[str, Any]]
) -> tuple[Check, list[Cause]] | None:
    calls = [e for e in events if e["kind"] == "torch_distributed"]
    if not calls:
        return None
    # Threads by (pid, ident): idents repeat across the processes of a run.
    replicas = {(e.get("pid"), e["ident"]) for e in events if e["kind"] == "replica_thread"}
    causes = []
    for call in calls:
        name = call["name"].rsplit(".", 1)[-1]
        site = call["site"]
        step = (call.get("pid"), call.get("thread")) in replicas
        where = "in the step" if step else "in a data loader"
        base = (
            f"`{call['name']}` {where}: torch.distributed is not initialised under Lightning's"
            " XLA strategy (it communicates through torch_xla), so this runs as a single"
            " process on each core"
        )
        if call.get("raised"):
            continue  # the run raised there: that exception is the cause
        if name == "is_initialized":
            skipped = guarded_collectives(site["path"], int(site["line"]))
            if skipped:
                instead = "; ".join(
                    dict.fromkeys(_INSTEAD.get(n, f"the strategy's {n}") for n in skipped)
                )
                causes.append(
                    ctx.cause(
                        "distributed",
                        "collective_skipped",
                        "fail",
                        f"{base}: it returned False, so the"
                        f" {', '.join(f'`{n}`' for n in skipped)} it guards never runs and"
                        " each core computes with its own batch only (a different training"
                        f" than with DDP on GPUs); use {instead}",
                        site,
                        codes=("TPU505",),
                    )
                )
                continue
            ask = (
                "ask Lightning instead (`self.trainer.world_size > 1`, `self.trainer.global_rank`)"
                if where == "in the step"
                else "in a Dataset ask torch_xla (`torch_xla.runtime.global_ordinal()`,"
                " `torch_xla.runtime.world_size()`), or pass it the trainer's `global_rank` and"
                " `world_size`"
            )
            message = (
                f"{base}: it returned False, and the code it guards runs as on one process; {ask}"
            )
        else:
            instead = _INSTEAD.get(name, "the strategy's method (`self.trainer.strategy`)")
            message = f"{base}; use {instead}"
        causes.append(ctx.cause("distributed", "torch_distributed", "warn", message, site))
    status = status_of(causes)
    lines = sorted({(c.location.path, c.location.line) for c in causes if c.location})
    summary = (
        f"{plural(len(lines), 'line')} of yours asked torch.distributed, which Lightning's XLA"
        " strategy never initialises"
        + ("; a collective is skipped on every core" if status == "fail" else "")
        if causes
        else "torch.distributed was asked only where the run raised"
    )
    return Check("distributed", status, summary, {"calls": len(calls)}), causes
