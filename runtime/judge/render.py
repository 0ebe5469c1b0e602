"""The human-readable report: a header, a table per step and per core, the checks, the causes
with their lines and rule codes, and the verdict. Standard library only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from tpulint.runtime.judge.analysis import CHECK_LABELS, PARTIAL
from tpulint.runtime.judge.check_memory import LABELS, PARTS
from tpulint.runtime.judge.hardware import hardware_lines
from tpulint.runtime.judge.report import Cause, CompareReport, StepRow, VerifyReport
from tpulint.runtime.tpu_hbm import format_bytes

_MAX_ROWS = 40  # longer runs show warm-up, every step that compiled, and the edges


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]], right: set[int]) -> list[str]:
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        parts = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        lines.append("  " + "  ".join(parts).rstrip())
    return lines


def _shape(batch: list[list[int]] | None) -> str:
    if not batch:
        return "-"
    return ", ".join("x".join(map(str, s)) or "scalar" for s in batch)


def _visible(rows: list[StepRow]) -> list[StepRow | None]:
    """Rows to print, None marking an elided stretch of uneventful steps."""
    if len(rows) <= _MAX_ROWS:
        return list(rows)
    shown: list[StepRow | None] = []
    for index, row in enumerate(rows):
        keep = (
            index < 8
            or index >= len(rows) - 4
            or row.uncached_compiles > 0
            or row.new_graphs > 0
            or row.phase != "steady"
        )
        if keep:
            shown.append(row)
        elif shown and shown[-1] is not None:
            shown.append(None)
    return shown


def _step_table(report: VerifyReport) -> list[str]:
    rows = []
    elided = 0
    for row in _visible(report.steps):
        if row is None:
            elided += 1
            rows.append(["...", "", "", "", "", "", "", "", "", "", ""])
            continue
        rows.append(
            [
                row.step,
                row.epoch,
                row.batch_idx,
                row.phase,
                row.uncached_compiles,
                row.new_graphs,
                row.cached_executions,
                row.transfers,
                row.host_ops,
                row.batch_size if row.batch_size is not None else "mixed",
                f"{row.seconds:.2f}s",
            ]
        )
    headers = [
        "step",
        "epoch",
        "batch",
        "phase",
        "compiles",
        "new graphs",
        "cached",
        "transfers",
        "host ops",
        "per-core batch",
        "time",
    ]
    lines = [
        "Per step (summed over the cores; compiles = uncached XLA compiles, new graphs ="
        " graphs compiled for the first time)"
    ]
    lines += _table(headers, rows, right={0, 1, 2, 4, 5, 6, 7, 8, 9, 10})
    if elided:
        lines.append("  (... = steady steps without compiles, not shown)")
    return lines


def _core_table(report: VerifyReport) -> list[str]:
    cores: dict[int, dict[str, object]] = {}
    for row in report.steps:
        for core, data in row.cores.items():
            entry = cores.setdefault(
                core, {"steps": 0, "transfers": 0, "compiles": 0, "shapes": Counter()}
            )
            entry["steps"] += 1 if data.batch is not None else 0  # type: ignore[operator]
            entry["transfers"] += data.transfers  # type: ignore[operator]
            entry["compiles"] += data.compiles  # type: ignore[operator]
            entry["shapes"][_shape(data.batch)] += 1  # type: ignore[index]
    first = report.shards[0] if report.shards else None
    shard_of = {c.core: c for c in first.cores} if first else {}
    rows = []
    for core in sorted(set(cores) | set(shard_of)):
        entry = cores.get(core, {"steps": 0, "transfers": 0, "compiles": 0, "shapes": Counter()})
        shard = shard_of.get(core)
        shapes: Counter[str] = entry["shapes"]  # type: ignore[assignment]
        rows.append(
            [
                core,
                shard.sampler if shard else "-",
                str(shard.built_at)
                if shard and shard.built_at
                else ("Lightning" if shard else "-"),
                f"{shard.num_replicas}/{shard.rank}"
                if shard and shard.num_replicas is not None
                else "-",
                shard.indices if shard else "-",
                shard.unique if shard else "-",
                shard.batches if shard and shard.batches is not None else "-",
                entry["steps"],
                entry["transfers"],
                entry["compiles"],
                shapes.most_common(1)[0][0] if shapes else "-",
            ]
        )
    headers = [
        "core",
        "sampler",
        "built by",
        "replicas/rank",
        "shard",
        "unique",
        "batches",
        "steps",
        "host reads",
        "compiles",
        "batch shape",
    ]
    compiles = (
        "step-marker compiles" if report.backend.get("emulated") else "its process's compiles"
    )
    title = "Per core" + (
        f" (shard of epoch {first.epoch}; steps, host reads from Python and {compiles} over"
        " the run)"
        if first
        else ""
    )
    return [title, *_table(headers, rows, right={0, 4, 5, 6, 7, 8, 9})]


def _memory_lines(report: VerifyReport) -> list[str]:
    """The estimate's parts, XLA's own sizes beside it, and on a TPU the measured peak."""
    memory = report.memory
    if not memory:
        return []
    parts = memory["parts"]
    floats = "float32 stored as bf16" if memory["precision"] == "bf16-true" else "dtypes as run"
    shown = []
    for name in PARTS:
        label, part = LABELS[name], parts[name]
        ahead = part.get("batches_on_device", 1) - 1 if name == "batch" else 0
        extra = f" (this step's and {ahead} prefetched)" if ahead > 0 else ""
        shown.append(f"{label} {format_bytes(part['bytes'])}{extra}")
    lines = [
        f"Memory per core (an estimate for the TPU under precision {memory['precision']}:"
        f" {floats}, arrays padded to the TPU's tiles)",
        f"  {format_bytes(memory['estimated_bytes_per_core'])} = " + " + ".join(shown),
    ]
    xla = memory.get("xla") or {}
    largest = xla.get("largest")
    # Emulated, the run's own arrays are the float32 CPU program's; a TPU's are the estimate's.
    emulated = report.backend.get("emulated", True)
    parts_here = [f"as run here (emulated, untiled): {format_bytes(memory['as_run_bytes'])}"]
    if largest:
        parts_here.append(
            f"XLA's sizes for the largest of the {xla['graphs']} graphs compiled: inputs"
            f" {format_bytes(largest['input_bytes'])}, outputs"
            f" {format_bytes(largest['output_bytes'])}, aliased"
            f" {format_bytes(largest['aliased_bytes'])}, intermediates"
            f" {format_bytes(largest['intermediate_bytes'])}"
        )
    if not emulated:
        parts_here = parts_here[1:]
    if parts_here:
        lines.append("  " + "; ".join(parts_here))
    measured = memory.get("measured")
    if measured and measured.get("peak_bytes_used"):
        limit = measured.get("bytes_limit")
        lines.append(
            f"  measured on this TPU: peak {format_bytes(measured['peak_bytes_used'])}"
            + (f" of {format_bytes(limit)}" if limit else "")
            + " (xm.get_memory_info)"
        )
    return lines


def _cause_line(cause: Cause) -> list[str]:
    where = f"{cause.location}: " if cause.location else ""
    codes = f" [{', '.join(_rule_refs(cause))}]" if cause.rules else ""
    return [f"  {cause.severity.upper():4}  {where}{cause.message}{codes}"]


def _rule_refs(cause: Cause) -> list[str]:
    refs = []
    for hit in cause.rules:
        elsewhere = cause.location is None or hit.line != cause.location.line
        refs.append(f"{hit.code} line {hit.line}" if elsewhere else hit.code)
    return refs


def _header(report: VerifyReport) -> list[str]:
    backend = report.backend
    versions = backend.get("versions") or {}
    parts = [describe_cores(backend)]
    if versions:
        parts.append(
            f"torch_xla {versions.get('torch_xla')}, lightning {versions.get('lightning')}"
        )
    settings = report.settings
    recorded = report.run.get("recorded")
    if recorded:  # tpulint report: a run TPUReadiness recorded
        epochs_run = report.run.get("epochs") or 0
        parts.append(
            f"recorded by TPUReadiness: {plural_text(epochs_run, 'epoch')},"
            f" {plural_text(len(report.steps), 'training step')}, warm-up {settings.get('warmup')}"
        )
        return [f"tpulint report {recorded}", "  " + " | ".join(parts)]
    steps = settings.get("steps_per_epoch")
    epochs = f"{settings.get('epochs')} epochs"
    added = report.run.get("extended_by")
    if added:
        why = {"too_short": "too few steps to judge", "new_graphs": "new graphs still came"}
        epochs = (
            f"{settings.get('epochs') + added} epochs ({added} added:"
            f" {why.get(report.run.get('extended_because'), 'to judge')})"
        )
    parts.append(
        f"{epochs} of {'at most ' + str(steps) if steps else 'all'}"
        f" steps, warm-up {settings.get('warmup')}"
    )
    parts.append(f"{report.wall_seconds:.1f}s")
    given = [report.target] if report.target else []
    given += [f"--datamodule {report.datamodule}"] if report.datamodule else []
    given += [f"--config {path}" for path in report.config]
    lines = [f"tpulint verify {' '.join(given)}", "  " + " | ".join(parts), *_trainer_lines(report)]
    crash = report.run.get("emulation_crash")
    if crash:
        lines.append(
            f"  note: the first run's emulated cores crashed inside torch_xla ({crash}), with no"
            " line of yours on the stack; verify ran the module again and judged that run"
        )
    return lines


def plural_text(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _trainer_lines(report: VerifyReport) -> list[str]:
    """The user's Trainer arguments, and each one verify overrode with the reason (none for a
    run with no Trainer arguments given, on the `lightning` Trainer)."""
    trainer = report.trainer or {}
    requested = trainer.get("requested") or {}
    overridden = trainer.get("overridden") or []
    package = trainer.get("package")
    if not (requested or overridden or package not in (None, "lightning")):
        return []
    name = (trainer.get("class") or "Trainer").replace(".trainer.trainer.", ".")
    args = ", ".join(f"{k}={_value(v)}" for k, v in requested.items())
    lines = [f"  {name}({args})" + (": verify's own settings won for" if overridden else "")]
    for item in overridden:
        used = " -> not used" if item["used"] is None else f" -> {_value(item['used'])}"
        lines.append(f"    {item['name']}={_value(item['requested'])}{used}: {item['reason']}")
    return lines


def _value(value: object) -> str:
    """A Trainer argument as recorded (`<pkg.Class>` for objects), shortly."""
    if isinstance(value, str) and value.startswith("<") and value.endswith(">"):
        return value[1:-1].rsplit(".", 1)[-1]
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict) and "class_path" in value:
        return str(value["class_path"]).rsplit(".", 1)[-1]
    return repr(value) if isinstance(value, str) else str(value)


def partly_judged(report: VerifyReport) -> bool:
    """A run that ran out of time while stepping (or compiling): what it recorded was judged
    and is shown, though the verdict is ERROR (exit 2)."""
    return report.run.get("status") in PARTIAL and bool(report.checks)


def describe_cores(backend: dict[str, object]) -> str:
    """`8 emulated cores (PJRT CPU, threads of one process)`, `4 TPU cores of a v4-8 (4
    processes x 1 device)`."""
    cores = backend.get("cores")
    layout = backend.get("layout") or {}
    processes, per_process = layout.get("processes"), layout.get("devices_per_process")  # type: ignore[union-attr]
    shape = (
        f"{processes} process{'es' if processes != 1 else ''} x {per_process}"
        f" device{'s' if per_process != 1 else ''}"
        if processes
        else None
    )
    tpu_type = backend.get("tpu_type")
    if backend.get("emulated"):
        if tpu_type:
            return f"{cores} emulated cores as on a {tpu_type} (PJRT CPU, {shape})"
        return f"{cores} emulated cores (PJRT CPU, threads of one process)"
    of = f" of a {tpu_type}" if tpu_type else ""
    return f"{cores or 'all'} TPU cores{of}" + (f" ({shape})" if shape else "")


def render(report: VerifyReport, *, verbose: bool = False) -> str:
    lines = _header(report)
    if report.error and not partly_judged(report):
        lines += ["", f"error: {report.error}"]
        if verbose and report.error_detail:
            lines += ["", report.error_detail.rstrip()]
        lines += ["", f"verdict: ERROR (exit {report.exit_code}): verify could not run the module"]
        return "\n".join(lines) + "\n"
    if report.steps:
        lines += ["", *_step_table(report), "", *_core_table(report)]
    memory = _memory_lines(report)
    if memory:
        lines += ["", *memory]
    if report.hardware:
        lines += ["", *hardware_lines(report.hardware)]
    lines += ["", "Checks"]
    for name, check in report.checks.items():
        lines.append(f"  {check.status.upper():7} {CHECK_LABELS[name]:17}  {check.summary}")
    shown = [c for c in report.causes if verbose or c.severity != "info"]
    if shown:
        lines += ["", "Causes"]
        for cause in shown:
            lines += _cause_line(cause)
    if report.run.get("status") not in (None, "finished"):
        lines += ["", f"run: {report.run['status']}: {report.run.get('detail')}"]
    if verbose and report.error_detail:
        # The traceback of the replica that raised, or the stacks of the one that crashed.
        title = {"crashed": "The crashed replica's stacks (faulthandler)"}.get(
            report.run.get("status") or "", "Traceback of the replica that raised"
        )
        lines += ["", title, *["  " + line for line in report.error_detail.rstrip().splitlines()]]
    if verbose and report.log:
        lines += [
            "",
            "Child process output (last lines)",
            *["  " + line for line in report.log.rstrip().splitlines()[-30:]],
        ]
    lines += ["", f"verdict: {report.verdict.upper()} (exit {report.exit_code}): {report.summary}"]
    return "\n".join(lines) + "\n"


def _sharding_cell(report: VerifyReport) -> str:
    check = report.checks.get("sharding")
    if check is None:
        return "-"
    if not report.shards or check.status == "fail":
        return check.status
    first = report.shards[0]
    sizes = "/".join(str(n) for n in sorted({c.indices for c in first.cores}))
    batches = "/".join(str(n) for n in sorted({c.batches for c in first.cores if c.batches}))
    return f"{check.status} ({len(first.cores)} x {sizes} indices, {batches} batches/core)"


def _batch_cell(report: VerifyReport) -> str:
    check = report.checks.get("batch_geometry")
    if check is None or "per_core_batch" not in check.details:
        return "-"
    full = check.details["per_core_batch"]
    smaller = sorted(int(k) for k in check.details.get("sizes_seen", {}) if int(k) < full)
    return f"{full}" + (f" (last {'/'.join(map(str, smaller))})" if smaller else "")


def _metric_rows(report: VerifyReport) -> list[tuple[str, str]]:
    if report.error:
        return [("verdict", f"ERROR: {report.error}")]
    compiles = report.checks.get("compile_stability")
    transfers = report.checks.get("transfers")
    details = compiles.details if compiles else {}
    shapes = [
        f"line {c.location.line}"
        for c in report.causes
        if c.kind == "data_dependent_shape" and c.location
    ]
    return [
        ("verdict", report.verdict.upper()),
        ("new graphs in the final window", str(details.get("graphs_in_window", "-"))),
        ("compiles after warm-up", str(details.get("compiles_after_warmup", "-"))),
        (
            "compiles in total (warm-up)",
            f"{details.get('compiles_total', '-')} ({details.get('compiles_warmup', '-')})",
        ),
        ("data-dependent shapes", ", ".join(shapes) or "none"),
        (
            "transfers per step per core",
            str(transfers.details.get("per_step_per_core", 0)) if transfers else "-",
        ),
        ("sharding", _sharding_cell(report)),
        ("per-core batch", _batch_cell(report)),
        (
            "memory per core (estimate)",
            format_bytes(report.memory["estimated_bytes_per_core"]) if report.memory else "-",
        ),
        ("steps run", str(len(report.steps))),
        ("wall time", f"{report.wall_seconds:.1f}s"),
    ]


def compare_summary(result: CompareReport) -> str:
    """The fixed run's summary, and the equivalence when it is what fails."""
    equivalence = result.equivalence
    if equivalence is not None and not equivalence.equivalent and result.fixed.verdict != "error":
        return f"{result.fixed.verdict}, but {equivalence.line()}"
    return result.fixed.summary


def render_compare(result: CompareReport, *, verbose: bool = False) -> str:
    original, fixed = result.original, result.fixed
    lines = [f"tpulint verify --compare {original.target or ''}".rstrip()]
    if result.changed:
        fixes = ", ".join(f"{f['code']} line {f['line']}" for f in result.fixes)
        lines.append(f"  tpulint fix --unsafe-fixes applied: {fixes}")
    else:
        lines.append(
            "  tpulint fix --unsafe-fixes changes nothing in the target's files;"
            " one run stands for both columns"
        )
    before, after = _metric_rows(original), dict(_metric_rows(fixed))
    rows = [[name, value, after.get(name, "-")] for name, value in before]
    lines += ["", *_table(["", "as written", "after tpulint fix"], rows, right=set())]
    if result.remaining:
        lines += ["", "Still reported by tpulint check after the fix:"]
        lines += [
            f"  {r['path']}:{r['line']}: {r['code']} {r['message']}" for r in result.remaining
        ]
    if verbose:
        lines += ["", "--- as written ---", render(original, verbose=True).rstrip()]
        if result.changed:
            lines += ["", "--- after tpulint fix ---", render(fixed, verbose=True).rstrip()]
    else:
        for label, report in (("as written", original), ("after tpulint fix", fixed)):
            causes = [c for c in report.causes if c.severity == "fail"]
            if causes:
                lines += ["", f"Failing causes, {label}:"] + [
                    line for cause in causes for line in _cause_line(cause)
                ]
    from tpulint.runtime.judge.equivalence import render_line

    lines += ["", render_line(result)]
    lines += [
        "",
        f"verdict: {result.verdict.upper()} (exit {result.exit_code}):"
        f" after tpulint fix, {compare_summary(result)}",
    ]
    return "\n".join(lines) + "\n"
