"""Memory: will the training step fit in a TPU core's HBM?

An estimate, made from what the child recorded of one training step (child/memory.py): every
array sized in the dtype it has on the TPU under the run's precision and padded to the TPU's
tiles (runtime/tpu_layout.py), in six parts added up:

  parameters + gradients + optimizer state
  + batch x (1 + the batches MpDeviceLoader keeps on the device ahead of the step)
  + activations (the largest set of tensors autograd kept for backward at once)
  + temporaries (an allowance of the two largest activations: the gradients flowing
    through backward, an op's incoming and outgoing gradient alive together)

The sum is an upper bound of the step's live arrays: XLA frees activations as backward
produces gradients, and fuses most temporaries away. XLA's own post-compilation sizes of the
largest graph of the run (torch_xla's `PT_XLA_DEBUG_LEVEL` analysis: input, output, aliased,
intermediate) are shown beside it; on emulated cores they describe the float32 CPU program,
with buffer donation off, and its intermediate figure is far below a TPU's activations, so
they cross-check the parts, not the total. On a TPU the device's measured peak
(`xm.get_memory_info`) is shown too, and is what gets judged.

The limit is `--tpu-type` (runtime/tpu_hbm.py's table) or `--hbm`, and on a TPU the device's
own: above it fails, within 10% of it warns, with advice for the part that dominates. Without
a limit the check lists the TPU types the step fits with that headroom.
Parent process only; standard library only.
"""

from __future__ import annotations

from typing import Any

from tpulint.runtime.judge.context import Context
from tpulint.runtime.judge.report import Cause, Check, StepRow
from tpulint.runtime.tpu_hbm import HEADROOM, TPU_TYPES, MemoryLimit, format_bytes
from tpulint.runtime.tpu_layout import (
    BF16_PRECISIONS,
    host_bytes,
    total_host_bytes,
    total_tpu_bytes,
    tpu_bytes,
)

PARTS = ("parameters", "gradients", "optimizer_state", "batch", "activations", "temporaries")
LABELS = {
    "parameters": "parameters",
    "gradients": "gradients",
    "optimizer_state": "optimizer state",
    "batch": "batch",
    "activations": "activations",
    "temporaries": "temporaries",
}
METHOD = (
    "an estimate, not a measurement: the arrays of one training step (parameters, gradients,"
    " optimizer state, the batch with the batches prefetched to the device, the tensors"
    " autograd kept for backward, and an allowance of two activations for backward's"
    " temporaries), each in the dtype it has on the TPU and padded to the TPU's tiles, added up"
)

# --- the estimate -----------------------------------------------------------------------


def tpu_precision(events: list[dict[str, Any]]) -> str:
    """The Trainer precision the module runs with on a TPU: the one asked for (verify's
    emulation runs bf16-true as 16-true in float32, trainer_args.own_settings)."""
    trainer = next((e for e in events if e["kind"] == "trainer"), None) or {}
    requested = (trainer.get("requested") or {}).get("precision")
    if requested is None:
        requested = (trainer.get("used") or {}).get("precision")
    return str(requested) if requested is not None else "32-true"


def _records(value: Any) -> list[tuple[list[int], str, int]]:
    return [(list(shape), str(dtype), int(count)) for shape, dtype, count in value or []]


def _part(
    records: list[tuple[list[int], str, int]], precision: str, times: int = 1
) -> dict[str, int]:
    return {
        "bytes": total_tpu_bytes(records, precision) * times,
        "as_run_bytes": total_host_bytes(records) * times,
        "arrays": sum(count for _, _, count in records) * times,
    }


def estimate(recorded: dict[str, Any], precision: str) -> dict[str, Any]:
    """The parts and their sum, on the TPU under `precision`, and as the run held them."""
    if recorded.get("xla_use_bf16"):
        precision = "bf16-true"  # XLA_USE_BF16=1 in the environment: bf16 on the device
    parts: dict[str, dict[str, Any]] = {
        "parameters": _part(_records(recorded.get("parameters")), precision),
        "gradients": _part(_records(recorded.get("gradients")), precision),
        "optimizer_state": _part(_records(recorded.get("optimizer_state")), precision),
    }
    prefetch = recorded.get("prefetch")
    batches = 1 + (int(prefetch) if prefetch else 0)
    batch = _records(recorded.get("batch"))
    parts["batch"] = _part(batch, precision, batches)
    parts["batch"]["per_batch_bytes"] = total_tpu_bytes(batch, precision)
    parts["batch"]["batches_on_device"] = batches
    activations = _records(recorded.get("activations"))
    parts["activations"] = _part(activations, precision)
    # Backward's gradients: an op's incoming and outgoing gradient, each the size of an
    # activation, alive together; allowed for as the two largest activations.
    two = sorted(
        (
            (tpu_bytes(shape, dtype, precision), host_bytes(shape, dtype))
            for shape, dtype, count in activations
            for _ in range(min(count, 2))
        ),
        reverse=True,
    )[:2]
    parts["temporaries"] = {
        "bytes": sum(on_tpu for on_tpu, _ in two),
        "as_run_bytes": sum(as_run for _, as_run in two),
        "arrays": len(two),
    }
    if recorded.get("optimizer_state") is None:
        parts["optimizer_state"]["note"] = "no optimizer step ran while recording"
    if recorded.get("activations") is None:
        parts["activations"]["note"] = "saved tensors not recorded" + (
            f" (the saved-tensor hooks were refused: {recorded['hooks_refused']})"
            if recorded.get("hooks_refused")
            else ""
        )
    total = sum(part["bytes"] for part in parts.values())
    as_run = sum(part["as_run_bytes"] for part in parts.values())
    return {"bytes": total, "as_run_bytes": as_run, "parts": parts, "precision": precision}


# --- the judgement ----------------------------------------------------------------------


def _measured(events: list[dict[str, Any]]) -> dict[str, int] | None:
    """The device's own figures at the end of training (else after the first step)."""
    found = [e for e in events if e["kind"] == "memory_measured" and "error" not in e]
    if not found:
        return None
    last = found[-1]
    return {k: int(last[k]) for k in ("bytes_used", "peak_bytes_used", "bytes_limit") if k in last}


def _per_core_batch(rows: list[StepRow]) -> int | None:
    sizes = [r.batch_size for r in rows if r.batch_size]
    return max(sizes) if sizes else None


def _limit_text(limit: MemoryLimit) -> str:
    if limit.source == "tpu_type":
        return f"{limit.name}'s {format_bytes(limit.bytes)} per {limit.per}"
    if limit.source == "device":
        return f"this TPU's {format_bytes(limit.bytes)} (xm.get_memory_info)"
    return f"--hbm {format_bytes(limit.bytes)}"


def _smaller_batch(batch: int, dynamic: int, static: int, target: float) -> tuple[int, int] | None:
    """(per-core batch, accumulate_grad_batches) that keep `batch` samples per optimizer step
    and fit `target`, taking the batch, activations and temporaries as proportional to the
    per-core batch; None when even a batch of 1 does not fit."""
    room = target - static
    if batch < 2 or dynamic <= 0 or room <= 0:
        return None
    largest = int(batch * room / dynamic)
    if largest < 1:
        return None
    candidates = [batch // k for k in range(2, batch + 1) if batch % k == 0]
    fitting = [c for c in candidates if c <= largest]
    if not fitting:
        return None
    aligned = [c for c in fitting if c % 8 == 0]
    chosen = max(aligned) if aligned else max(fitting)
    return chosen, batch // chosen


def _advice(
    ctx: Context,
    recorded: dict[str, Any],
    result: dict[str, Any],
    target: float,
    batch: int | None,
) -> list[str]:
    parts = {name: part["bytes"] for name, part in result["parts"].items()}
    dynamic = parts["batch"] + parts["activations"] + parts["temporaries"]
    static = parts["parameters"] + parts["gradients"] + parts["optimizer_state"]
    groups = {
        "activations": parts["activations"] + parts["temporaries"],
        "batch": parts["batch"],
        "optimizer_state": parts["optimizer_state"],
        "parameters": parts["parameters"] + parts["gradients"],
    }
    dominant = max(groups, key=lambda name: groups[name])
    advice: list[str] = []
    fsdp = static / ctx.cores + dynamic if ctx.cores > 1 else None
    fsdp_text = (
        "shard parameters, gradients and optimizer state over the cores with Lightning's XLA"
        " FSDP strategy (`strategy=XLAFSDPStrategy()`, lightning.pytorch.strategies)"
        + (f": about {format_bytes(fsdp)} per core on {ctx.cores} cores" if fsdp else "")
    )
    if dominant in ("activations", "batch"):
        what = (
            f"activations kept for backward dominate ({format_bytes(groups['activations'])}"
            " with backward's temporaries)"
            if dominant == "activations"
            else f"the batch dominates ({format_bytes(parts['batch'])} with the batches"
            " prefetched to the device)"
        )
        text = (
            f"{what}: checkpoint the blocks that produce them"
            " (`torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)` keeps each"
            " block's input and recomputes the rest in backward), or train a smaller per-core"
            " batch with gradient accumulation"
        )
        smaller = _smaller_batch(batch, dynamic, static, target) if batch else None
        if smaller is not None:
            size, steps = smaller
            text += (
                f": a per-core batch of {size} with `accumulate_grad_batches={steps}` (the same"
                f" {batch} samples per optimizer step) needs about"
                f" {format_bytes(static + dynamic * size / batch)}"
            )
        advice.append(text)
    elif dominant == "optimizer_state":
        names = ", ".join(recorded.get("optimizers") or []) or "the optimizer"
        ratio = parts["optimizer_state"] / parts["parameters"] if parts["parameters"] else 0
        times = f"{ratio:.0f}" if abs(ratio - round(ratio)) < 0.05 else f"{ratio:.1f}"
        advice.append(
            f"the optimizer state dominates ({format_bytes(parts['optimizer_state'])}: {names}"
            f" keeps {times} values per parameter): a lighter optimizer (SGD with"
            " momentum keeps one value per parameter, Adafactor a factored second moment), or "
            + fsdp_text
        )
    else:
        advice.append(
            f"parameters and gradients dominate ({format_bytes(groups['parameters'])}): "
            + fsdp_text
        )
    floats = [
        dtype
        for name in ("parameters", "gradients", "optimizer_state")
        for _, dtype, _ in _records(recorded.get(name))
        if dtype in ("float32", "float64")
    ]
    if floats and result["precision"] not in BF16_PRECISIONS:
        halved = estimate(recorded, "bf16-true")["bytes"]
        advice.append(
            f"the weights are float32 (precision {result['precision']}):"
            ' `precision="bf16-true"` keeps every float in 16 bits on the TPU: about'
            f" {format_bytes(halved)} per core"
        )
    return advice


def check_memory(
    ctx: Context,
    events: list[dict[str, Any]],
    rows: list[StepRow],
    limit: MemoryLimit | None = None,
) -> tuple[Check, list[Cause], dict[str, Any]]:
    recorded = next((e for e in events if e["kind"] == "memory"), None)
    if recorded is None:
        failed = next((e for e in events if e["kind"] == "memory_error"), None)
        why = (
            f"the memory probe failed in {failed['where']} ({failed['type']}:"
            f" {failed['message']}); please report it"
            if failed
            else "no training step was recorded"
        )
        return Check("memory", "skipped", why), [], {}
    precision = tpu_precision(events)
    result = estimate(recorded, precision)
    measured = _measured(events)
    if limit is None and measured and measured.get("bytes_limit"):
        limit = MemoryLimit(measured["bytes_limit"], "this TPU", "device")
    judged = result["bytes"]
    what = f"about {format_bytes(judged)} per core (estimate)"
    if measured and measured.get("peak_bytes_used"):
        judged = measured["peak_bytes_used"]
        what = (
            f"{format_bytes(judged)} per core at peak (measured; estimate"
            f" {format_bytes(result['bytes'])})"
        )
    fits = [t for t in TPU_TYPES if judged <= (1 - HEADROOM) * t.hbm_bytes]
    xla = next((e for e in events if e["kind"] == "xla_memory"), None) or {}
    graphs = [
        {
            **graph,
            "total_bytes": graph.get("input_bytes", 0)
            + graph.get("output_bytes", 0)
            - graph.get("aliased_bytes", 0)
            + graph.get("intermediate_bytes", 0),
        }
        for graph in xla.get("sizes") or []
    ]
    largest = max(graphs, key=lambda g: g["total_bytes"]) if graphs else None
    causes: list[Cause] = []
    advice: list[str] = []
    verdict = None
    if limit is not None:
        ratio = judged / limit.bytes
        share = f"{ratio:.0%}" if ratio >= 0.01 else "under 1%"
        if judged > limit.bytes:
            verdict = "fail"
            summary = f"{what}: {share} of {_limit_text(limit)}"
        elif judged > (1 - HEADROOM) * limit.bytes:
            verdict = "warn"
            summary = f"{what}: {share} of {_limit_text(limit)}, within {HEADROOM:.0%} of it"
        else:
            verdict = "pass"
            summary = f"{what}: {share} of {_limit_text(limit)}"
        status = verdict
        target = (1 - HEADROOM) * limit.bytes
    else:
        target = (1 - HEADROOM) * max(t.hbm_bytes for t in TPU_TYPES)
        if fits:
            status = "pass"
            summary = f"{what}; fits " + (
                "every TPU type" if len(fits) == len(TPU_TYPES) else ", ".join(t.name for t in fits)
            )
            missing = [t for t in TPU_TYPES if t not in fits]
            if missing:
                summary += "; not " + ", ".join(t.label for t in missing)
        else:
            status = "warn"
            summary = (
                f"{what}: above every TPU type's HBM with {HEADROOM:.0%} headroom (the"
                f" largest: {max(TPU_TYPES, key=lambda t: t.hbm_bytes).label})"
            )
    if status in ("fail", "warn"):
        advice = _advice(ctx, recorded, result, target, _per_core_batch(rows))
        causes.append(
            ctx.cause(
                "memory",
                "memory_over_limit" if status == "fail" else "memory_near_limit",
                status,
                f"{summary}; " + "; ".join(advice),
                explain=False,
            )
        )
    memory = {
        "estimated_bytes_per_core": result["bytes"],
        "estimate": METHOD,
        "precision": result["precision"],
        "parts": result["parts"],
        "as_run_bytes": result["as_run_bytes"],
        "xla": {"graphs": len(graphs), "largest": largest} if graphs else None,
        "measured": measured,
        "limit": limit.to_json() if limit is not None else None,
        "verdict": verdict,
        "fits": [t.name for t in fits],
        "tpu_types": [
            {"name": t.name, "hbm_bytes": t.hbm_bytes, "per": t.per, "fits": t in fits}
            for t in TPU_TYPES
        ],
        "advice": advice,
        "recorded": {
            "epoch": recorded.get("epoch"),
            "batch_idx": recorded.get("batch_idx"),
            "saved_tensors": recorded.get("saved_tensors"),
            "optimizers": recorded.get("optimizers"),
            "optimizer_state_on_host": recorded.get("optimizer_state_on_host"),
            # What recording cost the run: the probe's hooks and XLA's sizes read at the end.
            "seconds": round(
                float(recorded.get("seconds") or 0) + float(xla.get("seconds") or 0), 4
            ),
        },
    }
    details = {"estimated_bytes_per_core": result["bytes"], "verdict": verdict}
    return Check("memory", status, summary, details), causes, memory
