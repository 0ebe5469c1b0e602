"""Judge whether the fixed module computes the same training as the original.

Both runs of `verify --compare` record, per core and per step, the loss and the norm of the
core's gradients, and the second run compares every final parameter with the first's
(runtime/child/equivalence.py). Values are compared relatively, |a - b| / max(|a|, |b|),
against a tolerance set by the run's precision: 1e-4 for float32 (a few hundred float32 ulps:
exact rewrites change the order of additions, and training amplifies rounding a little over
the steps), 2e-2 for 16-bit precisions. Parameters are compared tensor by tensor, the largest
difference over the largest magnitude, so a parameter near zero does not count as different.

The state the user's code computes is compared too: at the end of every planned epoch, the
module's and callbacks' host-side attributes and the logged values, with their Python types
(runtime/child/equivalence.py records them). A type that differs (a float that became a tensor,
a CPU tensor that stayed on the device) is a difference whatever the values; numbers are
compared with the same tolerance; strings, ints and bools exactly. Attributes whose values
differ between two runs of the unchanged module (a clock time, a temporary path) are not
compared when such a run is given (`baseline`).

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
    step: int | None  # None: the final parameters, or the state at the end of an epoch
    quantity: str  # "loss", "grad_norm", "parameter <name>", "steps", "state <where>"
    original: Any
    fixed: Any
    core: int | None = None
    rewrite: dict[str, Any] | None = None  # the rewrite suspected
    epoch: int | None = None  # the epoch at whose end a state differs
    # A state value that differs while its type does not: a clock time, say, differs between
    # any two runs; a second run of the unchanged module tells (`judge(..., baseline=)`).
    value_only: bool = False

    def to_json(self) -> dict[str, Any]:
        out = {
            "step": self.step,
            "quantity": self.quantity,
            "values": [self.original, self.fixed],
            "core": self.core,
            "rewrite": self.rewrite,
        }
        if self.epoch is not None:
            out["epoch"] = self.epoch
        return out


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
    states: int = 0  # values of host-side state and logged values compared
    # What differs between two runs of the unchanged module, so was not compared.
    nondeterministic: list[str] = field(default_factory=list)

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
            "states": self.states,
            "nondeterministic": self.nondeterministic,
        }

    @property
    def needs_baseline(self) -> bool:
        """Whether the difference is a state value only (the same type on both sides): it
        counts once a second run of the unchanged module shows the value is reproducible."""
        first = self.first_difference
        return first is not None and first.value_only

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
            if diff.epoch is not None:
                where = f"at the end of epoch {diff.epoch}"
            core = f" on core {diff.core}" if diff.core is not None else ""
            if diff.quantity.startswith("parameter") and isinstance(diff.original, float):
                change = (
                    f"differs by {_value(diff.original)} (largest magnitude {_value(diff.fixed)})"
                )
                text = f"not equivalent {where}: {diff.quantity} {change}"
            elif diff.quantity.startswith("state "):
                text = (
                    f"not equivalent {where}: {diff.quantity[6:]} is {diff.original} as written,"
                    f" {diff.fixed} rewritten"
                )
                if diff.core is not None:
                    text += f" (core {diff.core})"
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
        if self.nondeterministic:
            shown = ", ".join(self.nondeterministic[:3])
            more = (
                f" and {len(self.nondeterministic) - 3} more"
                if len(self.nondeterministic) > 3
                else ""
            )
            text += f"; not compared (they differ between two runs as written): {shown}{more}"
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


# Rewrites of host reads (values read back, collected, printed): when only the state the
# user's code keeps differs, not the training, they are the likely cause.
_HOST_READS = frozenset({"TPU101", "TPU102", "TPU103"})


def suspect(rewrites: list[dict[str, Any]], state: bool = False) -> dict[str, Any] | None:
    """The rewrite to name when the training differs: an unsafe rewrite of the computation
    (TPU1xx, TPU2xx) before others, the first in the file; when only the state differs
    (`state`), a rewrite of host reads first. `fix --prove` bisects to be sure."""
    if not rewrites:
        return None

    def rank(fix: dict[str, Any]) -> tuple[int, int, int, str, int]:
        unsafe = 0 if fix.get("applicability") == "unsafe" else 1
        computation = 0 if fix["code"][:4] in ("TPU1", "TPU2") else 1
        host = 0 if (not state or fix["code"] in _HOST_READS) else 1
        return (unsafe, host, computation, fix["path"], fix["line"])

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
    baseline: list[dict[str, Any]] | None = None,
) -> Equivalence | None:
    """Compare two runs' records; None when either run has none (it did not train).
    `baseline` is a second run of the unchanged module: state values that differ between it
    and `original` are not compared."""
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
    noisy: set[str] = set()
    if baseline is not None:
        for key, state in _states(original).items():
            other = _states(baseline).get(key)
            if other is not None:
                noisy |= {path for path, _, _ in _state_differences(state, other, tolerance)}
    states = 0
    before_states, after_states = _states(original), _states(fixed)
    for key in sorted(set(before_states) & set(after_states)):
        rank, epoch = key
        for path, a, b in _state_differences(
            before_states[key], after_states[key], tolerance, noisy
        ):
            worst = math.inf if a[0] != b[0] else max(worst, a[1])
            if first is None or (
                first.step is None
                and first.epoch is not None
                and epoch < first.epoch
                and first.quantity.startswith("state ")
            ):
                first = Difference(
                    None, f"state {path}", a[2], b[2], rank, epoch=epoch, value_only=a[0] == b[0]
                )
        states += _count(before_states[key])
    if first is not None:
        first.rewrite = suspect(rewrites, state=first.quantity.startswith("state "))
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
        states=states,
        nondeterministic=sorted(noisy),
    )


# --- host-side state ------------------------------------------------------------------------


def _states(events: list[dict[str, Any]]) -> dict[tuple[int, int], dict[str, Any]]:
    """(core, epoch) -> the state recorded at the end of that epoch."""
    out: dict[tuple[int, int], dict[str, Any]] = {}
    for event in events:
        if event.get("kind") != "equivalence_state":
            continue
        for state in event.get("epochs", []):
            out[(int(event.get("rank", 0)), int(state.get("epoch", 0)))] = state
    return out


def _count(state: dict[str, Any]) -> int:
    return (
        len(state.get("module", {}))
        + sum(len(v) for v in state.get("callbacks", {}).values())
        + len(state.get("logged", {}))
    )


def _state_differences(
    a: dict[str, Any], b: dict[str, Any], tolerance: float, skip: set[str] | None = None
) -> list[tuple[str, tuple[str, float, str], tuple[str, float, str]]]:
    """(where, (type, relative difference, shown) as written, ... rewritten) for every value
    that differs: "module attribute `summary[0]`", "callback `Timer` attribute `x`", "logged
    value `val_acc`"."""
    out: list[tuple[str, tuple[str, float, str], tuple[str, float, str]]] = []
    if a.get("error") or b.get("error"):
        return out
    places: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("module attribute `{}`", a.get("module", {}), b.get("module", {})),
        ("logged value `{}`", a.get("logged", {}), b.get("logged", {})),
    ]
    for name in sorted(set(a.get("callbacks", {})) | set(b.get("callbacks", {}))):
        places.append(
            (
                f"callback `{name}` attribute `{{}}`",
                a.get("callbacks", {}).get(name, {}),
                b.get("callbacks", {}).get(name, {}),
            )
        )
    for template, left, right in places:
        for key in sorted(set(left) | set(right)):
            _compare(template, key, left.get(key), right.get(key), tolerance, out, skip or set())
    return out


def _compare(
    template: str,
    path: str,
    a: dict[str, Any] | None,
    b: dict[str, Any] | None,
    tolerance: float,
    out: list,
    skip: set[str],
) -> None:
    where = template.format(path)
    if where in skip:
        return
    if a is None or b is None:
        shown_a = _describe(a) if a is not None else "absent"
        shown_b = _describe(b) if b is not None else "absent"
        out.append((where, ("absent", math.inf, shown_a), ("absent", math.inf, shown_b)))
        return
    if _type(a) != _type(b):
        out.append((where, (_type(a), math.inf, _describe(a)), (_type(b), math.inf, _describe(b))))
        return
    difference = _value_difference(a, b)
    if difference is not None and difference > (0.0 if _exact(a) else tolerance):
        out.append(
            (where, (_type(a), difference, _describe(a)), (_type(b), difference, _describe(b)))
        )
        return
    if "items" in a and "items" in b:
        items_a, items_b = a["items"], b["items"]
        if isinstance(items_a, dict) and isinstance(items_b, dict):
            for key in sorted(set(items_a) | set(items_b)):
                _compare(
                    template,
                    f"{path}[{key}]",
                    items_a.get(key),
                    items_b.get(key),
                    tolerance,
                    out,
                    skip,
                )
        elif isinstance(items_a, list) and isinstance(items_b, list):
            for index in range(min(len(items_a), len(items_b))):
                _compare(
                    template,
                    f"{path}[{index}]",
                    items_a[index],
                    items_b[index],
                    tolerance,
                    out,
                    skip,
                )


def _type(value: dict[str, Any]) -> str:
    """The type as compared: a tensor's device and dtype are part of it."""
    kind = str(value.get("t"))
    if kind == "torch.Tensor":
        return f"Tensor ({value.get('device')}, {value.get('dtype')})"
    if kind == "numpy.ndarray":
        return f"ndarray ({value.get('dtype')})"
    return kind


def _exact(value: dict[str, Any]) -> bool:
    return value.get("t") in ("int", "bool", "str", "NoneType", "bytes") or (
        value.get("t") == "numpy.ndarray"
        and str(value.get("dtype", "")).startswith(("int", "bool"))
    )


def _float(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)  # "nan", "inf" as recorded
        except ValueError:
            return None
    return None


def _value_difference(a: dict[str, Any], b: dict[str, Any]) -> float | None:
    """How far two values of one type are apart (0 when equal); None when they have no value
    of their own (containers are compared by their items)."""
    if "shape" in a and a.get("shape") != b.get("shape"):
        return math.inf
    if "n" in a and a.get("n") != b.get("n"):
        return math.inf
    if "v" in a or "v" in b:
        x, y = a.get("v"), b.get("v")
        fx, fy = _float(x), _float(y)
        if isinstance(x, str) and a.get("t") == "str":
            return 0.0 if x == y else math.inf
        if fx is None or fy is None:
            return 0.0 if x == y else math.inf
        return relative(fx, fy)
    if "head" in a and "head" in b:
        scale = max(_float(a.get("absmax")) or 0.0, _float(b.get("absmax")) or 0.0)
        worst = 0.0
        for x, y in zip(a["head"], b["head"], strict=False):
            fx, fy = _float(x), _float(y)
            if fx is None or fy is None or math.isnan(fx) or math.isnan(fy):
                worst = max(worst, 0.0 if str(x) == str(y) else math.inf)
                continue
            worst = max(worst, abs(fx - fy) / scale if scale else (0.0 if fx == fy else math.inf))
        sa, sb = _float(a.get("sum")), _float(b.get("sum"))
        if sa is not None and sb is not None:
            numel = 1
            for size in a.get("shape", []):
                numel *= int(size)
            floor = scale * max(numel, 1) * 1e-7
            if not (math.isnan(sa) and math.isnan(sb)):
                gap = abs(sa - sb)
                worst = max(worst, gap / max(abs(sa), abs(sb), floor) if gap else 0.0)
        return worst
    if "sum" in a and "sum" in b:
        return relative(_float(a["sum"]), _float(b["sum"]))
    return None


def _describe(value: dict[str, Any]) -> str:
    """A value as the report shows it: `float 1.37078`, `Tensor (xla, float32, [])`."""
    kind = _type(value)
    if "v" in value:
        shown = value["v"]
        if isinstance(shown, float):
            shown = f"{shown:.6g}"
        elif isinstance(shown, str) and value.get("t") == "str":
            shown = repr(shown)
        return f"{kind} {shown}"
    if "shape" in value:
        return (
            f"{kind[:-1]}, {value['shape']})" if kind.endswith(")") else f"{kind} {value['shape']}"
        )
    if "n" in value:
        return f"{kind} of {value['n']}"
    return kind


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
