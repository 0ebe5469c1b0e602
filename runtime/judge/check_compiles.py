"""Compile stability: after warm-up, the run must reach a steady state in which no new XLA
graph is compiled.

The rule (docs/verify.md, "How compile stability is judged"), on graphs, not step counts:

* Graphs are identified by torch_xla's graph hash. A graph is *new* in the row where it is
  first compiled; compiling a graph that was compiled before (replica threads racing to
  compile the same graph at a host read, on emulated cores) is not a new graph.
* Graphs first compiled during warm-up (the first --warmup steps) or setup are expected.
* The final steady window (steady.py: the last whole epochs holding at least 3 training
  steps after warm-up) must contain no new graph: new graphs there are graphs that keep
  coming, and fail. A run too short to have a window is not judged (verify extends the run
  first, within its budget).
* A graph first compiled after warm-up and before the window is a *one-time compile*: its
  situation recurred in the window without compiling again, so it was reused. It is
  reported with its step and cause: the first accumulation cycle, the first epoch
  boundary, the step settling right after warm-up (info), a ragged last batch (warning,
  with the drop_last fix), or a change of the step's graphs after they had been steady, a
  phase switch (warning: each switch is a compile on the TPU).
* An op whose output size depends on the data (`x[mask]`, `nonzero`, ...) fails even when
  its compiles stop: on emulated cores the replicas share one compile cache and the sizes
  run out quickly, while a TPU run with real data keeps meeting new sizes.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tpulint.runtime.judge.context import Context, plural, span, status_of
from tpulint.runtime.judge.graph_causes import Explanation, GraphCauses
from tpulint.runtime.judge.graphs import Graph, compile_sites
from tpulint.runtime.judge.report import Cause, Check, StepRow
from tpulint.runtime.judge.steps import core_batch_size, raw_rank_buckets, row_batch_position
from tpulint.runtime.steady import MIN_STEADY_STEPS, steady_window

# How a data-dependent-size op reads in a message, and the static alternative.
_SHAPE_OPS: dict[str, tuple[str, str]] = {
    "boolean_mask": (
        "boolean-mask indexing `x[mask]`",
        "keep shapes static: weight by the mask (`torch.where(mask, x, 0)`) and reduce",
    ),
    "boolean_mask_assign": (
        "boolean-mask assignment `x[mask] = v`",
        "`x.masked_fill_(mask, v)` or `torch.where` stays on the device",
    ),
    "nonzero": ("`nonzero`", "use a fixed-size form (`nonzero_static`, masks)"),
    "argwhere": ("`argwhere`", "use a fixed-size form (masks, `nonzero_static`)"),
    "masked_select": ("`masked_select`", "weight by the mask instead of selecting"),
    "unique": ("`unique`", "avoid value-dependent sizes in the step"),
    "unique_consecutive": ("`unique_consecutive`", "avoid value-dependent sizes in the step"),
    "bincount": ("`bincount`", "pass a fixed `minlength` and bound the values"),
    "where_1arg": ("one-argument `torch.where`", "use the three-argument form"),
    "repeat_interleave": ("`repeat_interleave` with tensor repeats", "pass `output_size`"),
}


def shape_op_sites(events: list[dict[str, Any]], stage: str = "train") -> list[dict[str, Any]]:
    """Every data-dependent-size op, merged over steps and cores, per source line and kind."""
    merged: dict[tuple[str, int, str], dict[str, Any]] = {}
    for step, rank, bucket in raw_rank_buckets(events, stage):
        for op in bucket.get("shape_ops", []):
            site = op["site"]
            key = (site["path"], site["line"], op["kind"])
            entry = merged.setdefault(
                key,
                {
                    "site": site,
                    "kind": op["kind"],
                    "reader": op.get("reader"),
                    "count": 0,
                    "shapes": set(),
                    "steps": set(),
                    "cores": set(),
                },
            )
            entry["count"] += op["count"]
            entry["shapes"].update(op["shapes"])
            entry["steps"].add(step)
            entry["cores"].add(rank)
    return list(merged.values())


def _first_dims(shapes: set[str]) -> list[int]:
    dims = []
    for shape in shapes:
        head = shape.split("x")[0]
        if head.isdigit():
            dims.append(int(head))
    return dims


# Library functions that run a data-dependent op for the user's line and use its result on
# the host only (it never enters a graph), with the fix.
_KNOWN_SHAPE_READERS = (
    (
        "/torchmetrics/",
        "torchmetrics checks its arguments with `unique` on every call (`validate_args=True`,"
        " the default): pass `validate_args=False` to the metric (`accuracy(...,"
        " validate_args=False)`, `Accuracy(..., validate_args=False)`) once the inputs are known"
        " to be valid",
    ),
)


def _known_shape_reader(reader: dict[str, Any] | None) -> str | None:
    path = (reader or {}).get("path", "").replace("\\", "/")
    return next((advice for marker, advice in _KNOWN_SHAPE_READERS if marker in path), None)


def shape_causes(
    ctx: Context,
    sites: list[dict[str, Any]],
    check: str = "compile_stability",
    graph_steps: set[int] | None = None,
) -> list[Cause]:
    """`graph_steps`: the steps (batches) in which new graphs were compiled after warm-up;
    a varying size that compiled none is only used on the host (a host round trip per step,
    not a stream of graphs)."""
    causes = []
    unit, units = ("step", "steps") if check == "compile_stability" else ("batch", "batches")
    for entry in sorted(sites, key=lambda e: (e["site"]["path"], e["site"]["line"])):
        what, instead = _SHAPE_OPS.get(entry["kind"], (f"`{entry['kind']}`", ""))
        reader = entry.get("reader")
        known = _known_shape_reader(reader)
        if known:
            instead = known
        via = ""
        if reader:
            via = f" (in `{reader['function']}`, {_library_path(reader['path'])}:{reader['line']})"
        dims = _first_dims(entry["shapes"])
        cores = sorted(entry["cores"])
        varying = len(set(dims)) > 1
        # Its result enters a graph unless a library only checks it on the host, or (for
        # `unique`, which Python code usually inspects) no new graph came in its steps.
        compiled = not known and (
            graph_steps is None
            or bool(graph_steps & entry["steps"])
            or entry["kind"] not in ("unique", "unique_consecutive")
        )
        if varying and compiled:
            message = (
                f"{what}{via} has a data-dependent size ({span(dims)} seen across"
                f" {plural(len(cores), 'core')} and {plural(len(entry['steps']), unit, units)}):"
                " each new size compiles a new graph, and torch_xla computes the size on the"
                f" host every {unit}; {instead}"
            )
        elif varying:
            came = sorted((graph_steps or set()) & entry["steps"])
            graphs = (
                f"; new graphs came of it only at {unit} {span(came)}"
                if came
                else " (no new graph came of it)"
            )
            message = (
                f"{what}{via} has a data-dependent size ({span(dims)} seen), computed on the"
                f" host every {unit} and used there{graphs}, so each {unit} pays a host round"
                f" trip; {instead}"
            )
        else:
            message = (
                f"{what}{via} needs a host round trip to size its result every {unit}"
                f"{' (the size did not vary in this run)' if dims else ''}; {instead}"
            )
        causes.append(
            ctx.cause(
                check,
                "data_dependent_shape",
                "fail" if varying and compiled else "warn",
                message,
                entry["site"],
                steps=sorted(entry["steps"]),
                cores=cores,
                count=entry["count"],
            )
        )
    return causes


def _library_path(path: str) -> str:
    shown = path.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in shown:
            return shown.split(marker, 1)[1]
    return shown


def steps_after_warmup(rows: list[StepRow], warmup: int) -> dict[int, int]:
    """Training steps after warm-up, per epoch (every trained epoch appears)."""
    counts: dict[int, int] = {}
    for row in rows:
        counts[row.epoch] = counts.get(row.epoch, 0) + (1 if row.step >= warmup else 0)
    return counts


def window_rows(rows: list[StepRow], warmup: int) -> list[StepRow] | None:
    window = steady_window(steps_after_warmup(rows, warmup))
    if window is None:
        return None
    return [r for r in rows if r.epoch in window and r.step >= warmup]


def check_compiles(
    ctx: Context,
    rows: list[StepRow],
    events: list[dict[str, Any]],
    extra: list[Cause],
    graphs: list[Graph] | None = None,
    differences: GraphCauses | None = None,
) -> tuple[Check, list[Cause]]:
    """`extra`: causes decided elsewhere that belong to this check (diverged replicas);
    `differences`: what differs between the run's graphs (graph_causes.py)."""
    graphs = graphs or []
    causes: list[Cause] = list(extra)
    sites = shape_op_sites(events)
    graph_steps = {r.step for r in rows if r.phase != "warmup" and r.new_graphs}
    causes += shape_causes(ctx, sites, graph_steps=graph_steps)
    varying = any(c.kind == "data_dependent_shape" and c.severity == "fail" for c in causes)

    train_graphs = [g for g in graphs if g.row is not None and g.row.stage == "train"]
    warm = [g for g in train_graphs if g.row.phase == "warmup"]  # type: ignore[union-attr]
    window = window_rows(rows, ctx.warmup)
    in_window = {id(r) for r in window or []}
    # Graphs of steps in which an op's output size varied belong to that op's failure; a
    # ragged last batch before the window keeps its own cause (its new shapes compile
    # whatever else varies).
    shape_steps = {
        step
        for entry in sites
        if len(set(_first_dims(entry["shapes"]))) > 1
        for step in entry["steps"]
    }

    def shaped_by_data(graph: Graph) -> bool:
        row = graph.row
        assert row is not None
        if not varying or row.step not in shape_steps:
            return False
        return row.phase != "ragged" or id(row) in in_window

    late = [
        g
        for g in train_graphs
        if g.row.phase != "warmup"  # type: ignore[union-attr]
        and not shaped_by_data(g)
    ]
    keep_coming = [g for g in late if id(g.row) in in_window]  # not explained by a shape op
    one_time = [g for g in late if id(g.row) not in in_window]

    shaped = [g for g in train_graphs if shaped_by_data(g) and id(g.row) in in_window]
    if shaped:
        cause = next(c for c in causes if c.kind == "data_dependent_shape" and c.severity == "fail")
        cause.message += f"; {plural(len(shaped), 'new graph')} in the final steps of this run"
    explained = _explanations(differences, late)
    # A graph compiled once earlier for the same reason as those that keep coming (the same
    # line, another value) is part of that failure, not a harmless one-time compile.
    failing = {explained[id(g)].key for g in keep_coming if id(g) in explained}
    earlier = [g for g in one_time if id(g) in explained and explained[id(g)].key in failing]
    one_time = [g for g in one_time if g not in earlier]
    if keep_coming:
        causes += _keep_coming(ctx, keep_coming, earlier, window or [], explained)
    diffed = differences is not None and differences.available
    causes += _one_time(ctx, one_time, rows, events, explained, diffed)

    status = status_of(causes)
    not_judged = window is None and bool(rows)
    if not rows or (not_judged and status != "fail"):
        status = "skipped"
    summary = _summary(ctx, status, causes, rows, warm, keep_coming + shaped, window)
    after = [r for r in rows if r.phase != "warmup"]
    details = {
        "warmup_steps": ctx.warmup,
        "compiles_warmup": sum(r.uncached_compiles for r in rows if r.phase == "warmup"),
        "compiles_after_warmup": sum(r.uncached_compiles for r in after),
        "compiles_total": sum(r.uncached_compiles for r in rows),
        "compiles_epoch_boundary": _compiles_of(causes, rows, "epoch_boundary"),
        "compiles_ragged_batch": sum(r.uncached_compiles for r in rows if r.phase == "ragged"),
        "graphs_warmup": len(warm),
        "graphs_after_warmup": len(late),
        "graphs_one_time": len(one_time),
        "graphs_in_window": len(keep_coming) + len(shaped),
        "duplicate_compiles": sum(g.compiles - 1 for g in train_graphs),
        "window": _window_json(window, ctx),
        "per_step": [r.uncached_compiles for r in rows],
        "new_graphs_per_step": [r.new_graphs for r in rows],
    }
    return Check("compile_stability", status, summary, details), causes


def _compiles_of(causes: list[Cause], rows: list[StepRow], kind: str) -> int:
    """Uncached compiles in the steps of the one-time compiles of `kind`."""
    steps = {s for c in causes if c.kind == kind for s in c.steps}
    return sum(r.uncached_compiles for r in rows if r.step in steps)


def _window_json(window: list[StepRow] | None, ctx: Context) -> dict[str, Any] | None:
    if window is None:
        return None
    return {
        "epochs": sorted({r.epoch for r in window}),
        "steps": [window[0].step, window[-1].step] if window else [],
        "min_steps": MIN_STEADY_STEPS,
    }


def _by_site(
    ctx: Context, graphs: list[Graph]
) -> dict[tuple[Any, ...], tuple[dict[str, Any] | None, dict[str, Any] | None, list[Graph]]]:
    grouped: dict[tuple[Any, ...], Any] = {}
    for graph in graphs:
        user, library = compile_sites(graph, ctx.user_code)
        site = user or library
        key = (site or {}).get("path"), (site or {}).get("line")
        entry = grouped.setdefault(key, (user, library, []))
        entry[2].append(graph)
    return grouped


def _via(library: dict[str, Any] | None, user: dict[str, Any] | None) -> str:
    if not library:
        return ""
    shown = library["path"].replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in shown:
            shown = shown.split(marker, 1)[1]
    what = f"`{library['function']}` ({shown}:{library['line']})"
    if user:
        return f", through {what}"
    # A library's sync point (Lightning's optimizer step) is where the graph was cut and
    # compiled, not what changed it.
    return f" (compiled where {what} cuts the step's graph; no line of yours was on the stack)"


def _explanations(differences: GraphCauses | None, graphs: list[Graph]) -> dict[int, Explanation]:
    """id(graph) -> what differs in the graphs of its row, where the diff says anything."""
    if differences is None:
        return {}
    found: dict[int, Explanation] = {}
    for graph in graphs:
        explanation = differences.explain([graph.row]) if graph.row is not None else None
        if explanation is not None:
            found[id(graph)] = explanation
    return found


def _keep_coming(
    ctx: Context,
    graphs: list[Graph],
    earlier: list[Graph],
    window: list[StepRow],
    explained: dict[int, Explanation],
) -> list[Cause]:
    """New graphs inside the final steady window, one cause per line that made them differ
    (else per user line that triggered them); `earlier`: graphs compiled before the window
    for one of the same reasons."""
    epochs = sorted({r.epoch for r in window})
    where = (
        f"the final steady window (epoch{'s' if len(epochs) > 1 else ''}"
        f" {span(epochs)}, steps {window[0].step}..{window[-1].step})"
        if window
        else "the final steps"
    )
    groups: dict[tuple[Any, ...], list[Graph]] = defaultdict(list)
    for graph in graphs:
        explanation = explained.get(id(graph))
        if explanation is not None:
            groups[("explained", *explanation.key)].append(graph)
        else:
            user, library = compile_sites(graph, ctx.user_code)
            site = user or library or {}
            groups[("site", site.get("path"), site.get("line"))].append(graph)
    causes = []
    for key, group in groups.items():
        steps = sorted({g.row.step for g in group if g.row is not None})
        lead = f"{plural(len(group), 'new graph')} in {where}, at step {span(steps)}"
        if key[0] == "explained":
            explanation = explained[id(group[0])]
            before = [g for g in earlier if explained[id(g)].key == explanation.key]
            since = min((g.row.step for g in before if g.row is not None), default=None)
            if since is not None:
                lead += f" (and {len(before)} more since step {since})"
            causes.append(
                ctx.cause(
                    "compile_stability",
                    "new_graphs_in_window",
                    "fail",
                    f"{lead}: {explanation.text}"
                    + (f"; {explanation.advice}" if explanation.advice else ""),
                    explanation.site,
                    codes=("TPU302", "TPU303", "TPU304") if explanation.kind == "inputs" else (),
                    steps=steps,
                    count=len(group) + len(before),
                )
            )
            continue
        user, library = compile_sites(group[0], ctx.user_code)
        read = bool(user) and _at_host_read(group[0])
        how = (
            "compiled to read a value on the host here: the value's graph changes from step to step"
            if read
            else "the step's graph changed again: a Python value or a shape that varies per"
            " step is baked into the graph"
        )
        # Lightning's or torch_xla's frame is where the graph was cut, never the cause.
        causes.append(
            ctx.cause(
                "compile_stability",
                "new_graphs_in_window",
                "fail",
                f"{lead}{_via(library, user)}: new graphs keep coming; {how}",
                user,
                steps=steps,
                count=len(group),
            )
        )
    return causes


def _at_host_read(graph: Graph) -> bool:
    """The compile happened inside a Tensor read (`.item()`, `bool(t)`...), not at a sync."""
    for path, _line, function in graph.frames:
        if function in ("sync", "mark_step", "step_marker"):
            return False
        if function in ("item", "tolist", "__bool__", "__float__", "__int__", "__format__"):
            return True
        if "/torch_xla/" not in path.replace("\\", "/"):
            return True
    return False


def _one_time(
    ctx: Context,
    graphs: list[Graph],
    rows: list[StepRow],
    events: list[dict[str, Any]],
    explained: dict[int, Explanation] | None = None,
    diffed: bool = False,
) -> list[Cause]:
    """Graphs compiled once after warm-up and not again in the window: each reported with its
    step and cause. A graph whose difference is at a line of the user's is reported at that
    line with what differs; the others by when they came (accumulation, epoch boundary...)."""
    if not graphs:
        return []
    explained = explained or {}
    kinds: dict[tuple[str, ...], list[Graph]] = defaultdict(list)
    second_step = _second_optimizer_step(rows)
    for graph in graphs:
        explanation = explained.get(id(graph))
        why = _why_one_time(graph, rows, second_step)
        # A ragged last batch's new shapes are its own cause, whatever line they reach.
        if explanation is not None and explanation.site is not None and why != "ragged_last_batch":
            kinds[("graph_change", *map(str, explanation.key))].append(graph)
        else:
            kinds[(why,)].append(graph)
    causes = []
    for key, group in kinds.items():
        kind = key[0]
        steps = sorted({g.row.step for g in group if g.row is not None})
        count = len(group)
        reused = sum(1 for g in group if g.reused())
        evidence = (
            "reused later without compiling"
            if reused == count
            else f"{reused} of them reused later; the others ran once"
        )
        if kind == "ragged_last_batch":
            ragged = [g.row for g in group if g.row is not None]
            causes.append(_ragged_cause(ctx, ragged, events, count))  # type: ignore[arg-type]
            continue
        text, severity, site = _ONE_TIME_TEXT[kind], "info", None
        if kind == "graph_change":
            severity = "warn"
            explanation = explained.get(id(group[0]))
            if explanation is not None and explanation.site is not None:
                text = (
                    "the training step's graphs changed and the new ones stayed:"
                    f" {explanation.text}"
                )
                site = explanation.site
            else:
                # The compile happens where the graph is cut (Lightning's optimizer step),
                # not where it changed: only a line of the user's is worth showing.
                site, _ = compile_sites(group[0], ctx.user_code)
                if explanation is not None:
                    text += f"; {explanation.text}"
                elif diffed:
                    text += "; no line of yours differs between the graphs"
        causes.append(
            ctx.cause(
                "compile_stability",
                kind,
                severity,
                f"{plural(count, 'graph')} compiled once at step {span(steps)}"
                f" (epoch {span(sorted({g.row.epoch for g in group if g.row}))}) and {evidence}:"
                f" {text}",
                site,
                steps=steps,
                count=count,
            )
        )
    return causes


_ONE_TIME_TEXT = {
    "gradient_accumulation": (
        "gradient accumulation; the optimizer steps every few batches, so the first"
        " accumulation cycle's graphs (the first optimizer step among them) compile after"
        " warm-up"
    ),
    "epoch_boundary": (
        "the first epoch boundary; Lightning's end-of-epoch bookkeeping joins the first steps"
        " of the next epoch, compiled at the first boundary and reused at every later one"
    ),
    "settling": (
        "the training step settled right after warm-up (Lightning's logged-metric state"
        " changes over the first steps; with manual optimization the logging joins the next"
        " step's graph); then reused at every step"
    ),
    "graph_change": (
        "the training step's graphs changed after they had been steady, and the new ones stayed"
    ),
}


def _second_optimizer_step(rows: list[StepRow]) -> int | None:
    """The step of the second optimizer step, when the optimizer does not step every batch
    (gradient accumulation); None otherwise."""
    stepped = [r.step for r in rows if r.optimizer_steps]
    if not stepped or len(stepped) == len(rows):
        return None
    return stepped[1] if len(stepped) > 1 else stepped[0]


def _why_one_time(graph: Graph, rows: list[StepRow], second_step: int | None) -> str:
    row = graph.row
    assert row is not None
    if row.phase == "ragged":
        return "ragged_last_batch"
    if second_step is not None and row.step <= second_step:
        return "gradient_accumulation"
    later = [r for r in graph.executed_in if r is not row and r.stage == "train"]
    if row.epoch > 0 and row.batch_idx <= 1 and all(r.batch_idx <= 1 for r in later):
        return "epoch_boundary"
    if row.epoch == 0 and not any(
        r.step < row.step and r.phase == "steady" and not r.new_graphs for r in rows
    ):
        return "settling"
    return "graph_change"


def _ragged_cause(
    ctx: Context, ragged: list[StepRow], events: list[dict[str, Any]], compiles: int
) -> Cause:
    from tpulint.runtime.judge.check_batches import loader_site

    position = row_batch_position(ragged)
    sizes = sorted(
        {
            size
            for row in ragged
            for core in row.cores.values()
            if (size := core_batch_size(core.batch, position))
        }
    )
    steps = sorted({r.step for r in ragged})
    return ctx.cause(
        "compile_stability",
        "ragged_last_batch",
        "warn",
        f"{plural(compiles, 'extra graph')} at step {span(steps)} for the last batch of epoch"
        f" {ragged[0].epoch} ({'/'.join(map(str, sizes)) or 'fewer'} samples per core): the"
        " epoch does not divide into full batches, so that batch has new shapes (compiled"
        " once, reused by later epochs); set `drop_last=True` on the training DataLoader",
        loader_site(events),
        codes=("TPU303",),
        steps=steps,
        count=compiles,
    )


def _summary(
    ctx: Context,
    status: str,
    causes: list[Cause],
    rows: list[StepRow],
    warm: list[Graph],
    keep_coming: list[Graph],
    window: list[StepRow] | None,
) -> str:
    failing = [c for c in causes if c.severity == "fail"]
    if failing:
        first = failing[0]
        where = f" at {first.location}" if first.location else ""
        labels = {
            "data_dependent_shape": "data-dependent shapes",
            "diverged_replicas": "replica graphs diverged",
            "new_graphs_in_window": "new graphs keep coming",
        }
        lead = (
            f"{plural(len(keep_coming), 'new graph')} in the final steady window; "
            if keep_coming
            else ""
        )
        return f"{lead}{labels.get(first.kind, first.kind)}{where}"
    if not rows:
        return "not judged: no training step ran"
    if window is None:
        after = sum(steps_after_warmup(rows, ctx.warmup).values())
        return (
            f"not judged: {plural(after, 'training step')} after the"
            f" {plural(ctx.warmup, 'warm-up step')}, fewer than the {MIN_STEADY_STEPS} a"
            " steady window needs"
        )
    epochs = sorted({r.epoch for r in window})
    parts = [f"{plural(len(warm), 'graph')} during warm-up"]
    for cause in causes:
        if cause.count and cause.kind in _SUMMARY_WORDS:
            parts.append(
                f"{cause.count} once {_SUMMARY_WORDS[cause.kind]} (step {span(cause.steps)})"
            )
    return (
        f"stable: no new graph in the final {plural(len(window), 'step')}"
        f" (epoch {span(epochs)}); {', '.join(parts)}"
    )


_SUMMARY_WORDS = {
    "gradient_accumulation": "for gradient accumulation",
    "epoch_boundary": "at the first epoch boundary",
    "settling": "as the step settled",
    "graph_change": "when the step's graphs changed",
    "ragged_last_batch": "for a ragged last batch",
}
