"""Judge whether the fixed module computes the same training as the original.

Both runs of `verify --compare` record, per core and per step, the loss and the norm of the
core's gradients, and the second run compares every final parameter with the first's
(runtime/child/equivalence.py). Values are compared relatively, |a - b| / max(|a|, |b|),
against a tolerance set by the run's precision: 1e-4 for float32 (a few hundred float32 ulps:
exact rewrites change the order of additions, and training amplifies rounding a little over
the steps), 2e-2 for 16-bit precisions. Parameters are compared tensor by tensor, the largest
difference over the largest magnitude, so a parameter near zero does not count as different.

Standard library only (the parent imports no torch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

FLOAT32_TOLERANCE = 1e-4
HALF_TOLERANCE = 2e-2

# Fixes that change the training by design: the comparison leaves them out (a third run,
# with only the other rewrites) and says so; `fix --prove` does not apply them.
CHANGES_BY_DESIGN = {
    "TPU004": "changes the precision",
    "TPU007": "changes the number of devices",
    "TPU301": "changes the sampler",
    "TPU302": "changes the batch size",
    "TPU303": "drops the ragged last batch",
    "TPU304": "changes the padding",
    "TPU401": "changes the precision",
    "TPU402": "changes the precision",
}


def tolerance_for(precision: str | None) -> float:
    text = str(precision or "32")
    return HALF_TOLERANCE if ("16" in text and "32" not in text) else FLOAT32_TOLERANCE


def relative(a: float | None, b: float | None) -> float:
    """|a - b| / max(|a|, |b|); NaN equals NaN, NaN against a number is infinitely far."""
    if a is None or b is None:
        return 0.0 if a is b else math.inf
    if math.isnan(a) or math.isnan(b):
        return 0.0 if math.isnan(a) and math.isnan(b) else math.inf
    if a == b:
        return 0.0
    if math.isinf(a) or math.isinf(b):
        return math.inf
    return abs(a - b) / max(abs(a), abs(b))


@dataclass
class Difference:
    step: int | None  # None: the final parameters
    quantity: str  # "loss", "grad_norm", "parameter <name>", "steps"
    original: Any
    fixed: Any
    core: int | None = None
    rewrite: dict[str, Any] | None = None  # the rewrite suspected

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "quantity": self.quantity,
            "values": [self.original, self.fixed],
            "core": self.core,
            "rewrite": self.rewrite,
        }


@dataclass
class Equivalence:
    equivalent: bool
    steps: int  # steps compared, on every core
    max_relative_difference: float
    tolerance: float
    first_difference: Difference | None = None
    rewrites: list[dict[str, Any]] = field(default_factory=list)  # the fixes compared
    excluded: list[dict[str, Any]] = field(default_factory=list)  # left out, with the reason
    parameters: int = 0  # parameter tensors compared
    # Fixes on lines the training never ran (validation, another class): not checked.
    not_run: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "equivalent": self.equivalent,
            "steps": self.steps,
            "max_relative_difference": _finite(self.max_relative_difference),
            "tolerance": self.tolerance,
            "parameters": self.parameters,
            "first_difference": self.first_difference.to_json() if self.first_difference else None,
            "rewrites": self.rewrites,
            "excluded": self.excluded,
            "not_run": self.not_run,
        }

    def line(self) -> str:
        """The one-line verdict of the text report."""
        if self.equivalent:
            text = (
                f"equivalent over {self.steps} steps, max relative difference"
                f" {_number(self.max_relative_difference)} (tolerance {self.tolerance:.0e})"
            )
        else:
            diff = self.first_difference
            assert diff is not None
            where = f"from step {diff.step}" if diff.step is not None else "at the end"
            core = f" on core {diff.core}" if diff.core is not None else ""
            if diff.quantity.startswith("parameter") and isinstance(diff.original, float):
                change = (
                    f"differs by {_value(diff.original)} (largest magnitude {_value(diff.fixed)})"
                )
                text = f"not equivalent {where}: {diff.quantity} {change}"
            else:
                text = (
                    f"not equivalent {where}: {diff.quantity} {_value(diff.original)} vs"
                    f" {_value(diff.fixed)}{core}"
                )
            if diff.rewrite:
                text += (
                    f", first differing rewrite {diff.rewrite['path']}:{diff.rewrite['line']}"
                    f" {diff.rewrite['code']}"
                )
        if self.excluded:
            left_out = ", ".join(f"{f['code']} line {f['line']}" for f in self.excluded)
            text += f"; left out: {left_out} ({_reasons(self.excluded)})"
        if self.not_run:
            unchecked = ", ".join(f"{f['code']} line {f['line']}" for f in self.not_run)
            text += f"; not run by the training, so not checked: {unchecked}"
        return text


def _reasons(fixes: list[dict[str, Any]]) -> str:
    reasons = []
    for fix in fixes:
        reason = CHANGES_BY_DESIGN.get(fix["code"], "")
        if reason and reason not in reasons:
            reasons.append(reason)
    return ", ".join(reasons) + " by design"


def _finite(value: float) -> float | None:
    return None if math.isinf(value) or math.isnan(value) else value


def _number(value: float) -> str:
    if value == 0:
        return "0"
    return f"{value:.1e}" if value < 1e-3 else f"{value:.3g}"


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _traces(events: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Per core: the losses and gradient norms of the steps of the planned epochs (verify
    may train more epochs to find a steady window, and not as many in both runs)."""
    traces: dict[int, dict[str, Any]] = {}
    for e in events:
        if e.get("kind") != "equivalence_trace":
            continue
        planned = int(e.get("planned_steps", len(e.get("loss", []))))
        traces[int(e["rank"])] = {
            "loss": e.get("loss", [])[:planned],
            "grad_norm": e.get("grad_norm", [])[:planned],
        }
    return traces


def suspect(rewrites: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The rewrite to name when the training differs: an unsafe rewrite of the computation
    (TPU1xx, TPU2xx) before others, the first in the file; `fix --prove` bisects to be sure."""
    if not rewrites:
        return None

    def rank(fix: dict[str, Any]) -> tuple[int, int, str, int]:
        unsafe = 0 if fix.get("applicability") == "unsafe" else 1
        computation = 0 if fix["code"][:4] in ("TPU1", "TPU2") else 1
        return (unsafe, computation, fix["path"], fix["line"])

    chosen = min(rewrites, key=rank)
    return {k: chosen[k] for k in ("path", "line", "code")}


def executed_lines(events: list[dict[str, Any]]) -> dict[str, set[int]] | None:
    """The lines of the traced files that the training ran (None: not traced)."""
    for event in events:
        if event.get("kind") == "equivalence_lines":
            return {path: set(lines) for path, lines in event.get("files", {}).items()}
    return None


def ran(fix: dict[str, Any], executed: dict[str, set[int]] | None) -> bool:
    """Whether the training ran the line of `fix` ({"file": absolute path, "line", ...});
    True when nothing was traced (unknown)."""
    if executed is None or "file" not in fix:
        return True
    lines = executed.get(fix["file"], set())
    last = fix.get("end_line", fix["line"])
    return any(line in lines for line in range(fix["line"], last + 1))


def judge(
    original: list[dict[str, Any]],
    fixed: list[dict[str, Any]],
    *,
    rewrites: list[dict[str, Any]],
    excluded: list[dict[str, Any]] | None = None,
    precision: str | None = None,
) -> Equivalence | None:
    """Compare two runs' records; None when either run has none (it did not train)."""
    before, after = _traces(original), _traces(fixed)
    if not before or not after:
        return None
    executed = executed_lines(original)
    not_run = [f for f in rewrites if not ran(f, executed)]
    rewrites = [f for f in rewrites if ran(f, executed)]
    tolerance = tolerance_for(precision)
    worst = 0.0
    first: Difference | None = None
    steps = 0
    for core in sorted(set(before) | set(after)):
        a, b = before.get(core), after.get(core)
        if a is None or b is None:
            first = first or Difference(None, "cores", len(before), len(after))
            worst = math.inf
            continue
        count = min(len(a["loss"]), len(b["loss"]))
        steps = max(steps, count)
        for step in range(count):
            for quantity in ("loss", "grad_norm"):
                x = a[quantity][step] if step < len(a[quantity]) else None
                y = b[quantity][step] if step < len(b[quantity]) else None
                difference = relative(x, y)
                worst = max(worst, difference)
                if difference > tolerance and (
                    first is None or (first.step is not None and step < first.step)
                ):
                    first = Difference(step, quantity, x, y, core)
        if len(a["loss"]) != len(b["loss"]):
            worst = math.inf
            if first is None or first.step is None or count < first.step:
                first = Difference(count, "steps", len(a["loss"]), len(b["loss"]), core)
    parameters = 0
    for event in fixed:
        if event.get("kind") != "equivalence_params" or "parameters" not in event:
            continue
        for name, summary in sorted(event["parameters"].items()):
            parameters += 1
            if "shape" in summary:
                difference = math.inf
                values: tuple[Any, Any] = tuple(summary["shape"])  # type: ignore[assignment]
            else:
                scale = summary.get("scale") or 0.0
                difference = summary["max_abs"] / scale if scale else summary["max_abs"]
                values = (summary["max_abs"], scale)
            worst = max(worst, difference)
            if difference > tolerance and first is None:
                first = Difference(None, f"parameter {name}", values[0], values[1])
    if first is not None:
        first.rewrite = suspect(rewrites)
    return Equivalence(
        equivalent=first is None,
        steps=steps,
        max_relative_difference=worst,
        tolerance=tolerance,
        first_difference=first,
        rewrites=rewrites,
        excluded=list(excluded or []),
        parameters=parameters,
        not_run=not_run,
    )


def render_line(result: Any) -> str:
    """The equivalence line of `verify --compare`'s text report."""
    equivalence = result.equivalence
    if equivalence is not None:
        return f"Equivalence: {equivalence.line()}"
    if not result.changed:
        return "Equivalence: not checked: tpulint fix changes nothing"
    if result.original.error or result.fixed.error:
        return "Equivalence: not checked: a run did not finish"
    excluded = [f for f in result.fixes if f["code"] in CHANGES_BY_DESIGN]
    if excluded and len(excluded) == len(result.fixes):
        left_out = ", ".join(f"{f['code']} line {f['line']}" for f in excluded)
        return (
            f"Equivalence: not checked: every fix changes the training by design ({left_out}:"
            f" {_reasons(excluded)})"
        )
    return "Equivalence: not checked: a run recorded no steps"
