"""What a condition says about how often the code under it runs.

Shared by the project model (Python's `ast`: the guards of call sites, which a helper
inherits from every call that makes it hot) and the per-file context (libcst: the guards of
a reported node), so both read conditions the same way.

Guard kinds:
- "rare": only some batches or epochs (`if batch_idx == 0:`, logging and plotting flags,
  `if self.current_epoch % 10 == 0:`, any periodic test `if n_seen % log_freq == 0:` /
  `not i % 10`), or once (a lazy initialisation block), or for the first N batches (`if
  len(self.samples) < self.max_samples:` whose body grows `self.samples`; `if
  self.seen[split] < N:`, or the rest of a block after `cnt = self.seen[split]` then `if cnt
  > N: return`, where any file of the project increments an attribute `seen`, a callback's
  `pl_module.seen[split] += 1`: `first_n_counters`, settled by the project), or once per
  interval (`if epoch - self.last_sample >= self.interval:` whose body moves
  `self.last_sample`), or once per change of a key (`if self.shown != key:` whose body sets
  `self.shown = key`), or on the error
  path only (an assertion's message, the statements of a block before its `raise`, a branch
  that only warns: `if not ok.all(): warnings.warn(f"{(~ok).sum()} bad rows")`);
- also "rare": the first steps of the run (`if self.global_step < 5:`, a literal bound):
  the step count only grows, so in training and in validation alike the code runs in a
  few early steps only;
- "rare-train": a test on the optimizer step count (`self.global_step % 100 == 0`, or a
  periodic test of any counter named for steps: `step_count % log_freq == 0`), which
  is rare in training code but not in validation, test or predict code, where
  the step count does not advance: there the guarded code runs on every batch (or never);
- "device-check": a test of the device (`torch.cuda.is_available()`, `x.device.type`).

Names are read from the condition's text (`condition_kinds`), each on the side of its test
where the code is rare (`_names_rare_side`: the body of `if batch_idx == 0:` or `if
self.debug:`, the else of `if batch_idx != 0:` or `if not self.debug:`; after an early exit
on the rare side, `if self.global_step % n == 0: return ...`, the rest runs on the other
steps), shapes from its syntax
(`shape_kinds`, `first_n_targets`, `grows`, `marker_targets`, `resets`, `change_targets`,
`records`), so both walkers
pass source text and get one reading. Shapes are read through `and`, `or` and `not`: a
conjunction is as rare as its rarest conjunct (`rank == 0 and step % n == 0`), a disjunction
only as rare as its least rare operand (`i % n == 0 or i + 1 == len(loader)`: periodic, or
the epoch's last batch). A periodic test is rare when its divisor is a setting (a name or
attribute) or a literal of 4 or more, and not a per-step cadence (gradient accumulation,
device counts); `% 2` and `% 3` run too often to be rare.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

from tpulint.analysis.python_ast import self_attribute_name
from tpulint.analysis.python_ast import walk as ast_walk

# Names in a condition that make the guarded code run only for some batches or epochs
# (logging, visualisation, debugging), so a host sync there is not paid every step.
RARE_NAMES = re.compile(
    r"(batch_?(idx|nb|num|index|id|i)\b|current_epoch|\bepoch\b|log_every|"
    r"every_n|log_images?|_images\b|plot|visuali[sz]|debug|verbose|is_last_batch|"
    r"print_every|logging_interval|first_batch|sample_every|val_check|figure|\bimage|"
    # a Hugging Face Trainer's control flags, set at `logging_steps` / `save_steps` /
    # `eval_steps` by its callbacks (`if self.control.should_log:`)
    r"control\.should_(?:log|save|evaluate)\b)",
    re.IGNORECASE,
)
STEP_COUNTER = re.compile(r"global_step", re.IGNORECASE)
DEVICE_CHECK = re.compile(r"cuda|\bgpu\b|on_gpu|is_available|device\.type|device_type|mps")

# Callees that warn (`warnings.warn`, `logger.warning`, `rank_zero_warn`): a branch that only
# warns reports an abnormal condition, so what its message computes is not paid every step.
_WARNING_CALLEE = re.compile(
    r"(?:^|\.)(?:warn|warning|warn_once|warning_once|rank_zero_warn|rank_zero_warning)$"
)


def is_warning_callee(callee_text: str) -> bool:
    """Whether a callee's dotted text names a warning (`warnings.warn`, `self.log.warning`)."""
    return _WARNING_CALLEE.search(callee_text) is not None


# What a diagnostic branch calls: `print(...)`, a warning, a logger's message.
_REPORT_CALLEE = re.compile(
    r"^print$|(?:^|\.)(?:logger|logging|log|_logger|LOGGER|LOG)\."
    r"(?:info|debug|error|critical|exception|warning|warn)$"
)
# A check of a tensor for values a healthy run does not have: `torch.isnan(x).any()`,
# `torch.any(empty)`, `not torch.all(ok)`.
ANOMALY_CHECKS = frozenset({"isnan", "isinf", "isfinite", "isneginf", "isposinf"})
ANOMALY_REDUCTIONS = frozenset({"any", "all"})


def is_report_callee(callee_text: str) -> bool:
    """Whether a callee's dotted text prints or logs a message (`print`, `logger.info`,
    `warnings.warn`): what a diagnostic branch does."""
    return _REPORT_CALLEE.search(callee_text) is not None or is_warning_callee(callee_text)


RARE = "rare"
RARE_TRAIN = "rare-train"
DEVICE = "device-check"

# Hooks of the evaluation loops, where `global_step` stands still.
EVAL_HOOKS = frozenset(
    {
        "validation_step",
        "test_step",
        "predict_step",
        "validation_step_end",
        "test_step_end",
        "on_validation_batch_start",
        "on_validation_batch_end",
        "on_test_batch_start",
        "on_test_batch_end",
        "on_predict_batch_start",
        "on_predict_batch_end",
        "on_validation_model_eval",
    }
)


def condition_kinds(
    text: str,
    negated: bool = False,
    predicate: Callable[[str], str | None] | None = None,
    device: bool = True,
) -> frozenset[str]:
    """The guard kinds the source text of a condition stands for, for the code that runs
    where the test holds, or fails under `negated`: its shape (`shape_kinds`: periodic tests,
    a boolean method returning one) and its names, each read on the side where it is rare
    (`_names_rare_side`: the body of `if batch_idx == 0:` / `if self.debug:`, the else of
    `if batch_idx != 0:` / `if not self.debug:`, the rest of a block after `if
    self.global_step % n != 0: return`; the rest after `if self.global_step % n == 0: return
    ...` runs on the other steps: not rare). A device test counts where `device` (the
    callers' choice: the body of its `if`, the rest after its early exit)."""
    kinds: set[str] = set()
    if device and DEVICE_CHECK.search(text):
        kinds.add(DEVICE)
    if not RARE_NAMES.search(text) and not STEP_COUNTER.search(text):
        return frozenset(kinds | shape_kinds(text, negated, predicate))
    node = _parse(text)
    if node is None:  # not an expression: its names, whichever way it is read
        kinds.update(_name_kinds(text))
        return frozenset(kinds | shape_kinds(text, negated, predicate))
    anomaly = _NONFINITE.search(text) is not None
    kinds |= _kinds_where(node, not negated, anomaly, predicate, names=True)
    return frozenset(kinds)


def _name_kinds(text: str) -> set[str]:
    """ "rare" for a name of logging, plotting, debugging or a batch or epoch index in a
    condition's text, "rare-train" for the optimizer step count."""
    kinds = set()
    if RARE_NAMES.search(text):
        kinds.add(RARE)
    if STEP_COUNTER.search(text):
        kinds.add(RARE_TRAIN)
    return kinds


# A counter among the rare names (the batch index, the epoch, the step count): it is rare at
# a value (`== 0`) or below a bound (`< 5`), common above one (`batch_idx > 0`) or when
# truthy (`if batch_idx:`); any other rare name is a flag or level, rare when truthy
# (`if self.debug:`, `verbose > 1`) and common when false (`verbose == 0`).
_COUNTER_NAMES = re.compile(
    r"batch_?(?:idx|nb|num|index|id|i)\b|current_epoch|\bepoch\b|global_step", re.IGNORECASE
)
# A bound at the end of the epoch or run (`len(loader) - 1`, `self.max_epochs`,
# `num_batches`): a counter is rare at or above it, common below it.
_END_BOUND = re.compile(r"len\(|max_|num_|total|limit|\s-\s*1\b|n_batches", re.IGNORECASE)
_FLIPPED_ORDER: dict[type, type] = {
    ast.Lt: ast.Gt,
    ast.LtE: ast.GtE,
    ast.Gt: ast.Lt,
    ast.GtE: ast.LtE,
}


def _falsy_constant(node: ast.expr) -> bool:
    """`0`, `False`, `None`, `""`: what a flag or level is compared with when it is off."""
    if not isinstance(node, ast.Constant):
        return False
    value = node.value
    return (
        value is None
        or value is False
        or value == ""
        or (type(value) in (int, float) and value == 0)
    )


def _names_rare_side(node: ast.expr) -> bool | None:
    """On which side of a test with a rare name (not `and`/`or`/`not`) the rare code runs:
    True where it holds (`batch_idx == 0`, `step % n == 0`, `self.debug`, `batch_idx < 3`,
    `batch_idx >= len(loader) - 1`, `verbose > 0`, `self.should_log()`), False where it
    fails (`batch_idx != 0`, `step % n`, `batch_idx > 0`, `if batch_idx:`, `verbose == 0`,
    `self.debug is None`); None when the shape says nothing (either side, as the names
    alone say)."""
    if isinstance(node, ast.Compare):
        if len(node.ops) != 1:
            return None
        subject, op, other = node.left, type(node.ops[0]), node.comparators[0]
        if not _name_kinds(ast.unparse(subject)):
            if not _name_kinds(ast.unparse(other)):
                return None
            subject, other = other, subject
            op = _FLIPPED_ORDER.get(op, op)
        counter = _COUNTER_NAMES.search(ast.unparse(subject)) is not None
        if op in (ast.Eq, ast.Is, ast.In, ast.NotEq, ast.IsNot, ast.NotIn):
            at_value = counter or not _falsy_constant(other)
            return at_value if op in (ast.Eq, ast.Is, ast.In) else not at_value
        if op in (ast.Lt, ast.LtE, ast.Gt, ast.GtE):
            below = op in (ast.Lt, ast.LtE)
            if not counter:
                return not below  # `verbose > 1`, `verbose < 1`
            # `batch_idx < 3` (the first batches) but `batch_idx >= len(loader) - 1` (the last)
            return below != (_END_BOUND.search(ast.unparse(other)) is not None)
        return None
    if isinstance(node, ast.BinOp):
        # `if step % n:` holds off the period
        return False if isinstance(node.op, ast.Mod) else None
    if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
        return _COUNTER_NAMES.search(ast.unparse(node)) is None
    if isinstance(node, ast.Call):
        return True  # `self.should_log()`, `is_debug(cfg)`
    return None


def effective(kinds: frozenset[str] | set[str], root_hook: str | None) -> frozenset[str]:
    """Guard kinds as seen from code reached from `root_hook`: a step-count guard is rare in
    training code and means nothing in evaluation code."""
    if RARE_TRAIN not in kinds:
        return frozenset(kinds)
    out = set(kinds)
    out.discard(RARE_TRAIN)
    if root_hook not in EVAL_HOOKS:
        out.add(RARE)
    return frozenset(out)


# A lazy initialisation: `if not self.built:` / `if self.cache is None:` /
# `if not hasattr(self, "x"):` whose body sets the attribute: the body runs once.
LAZY_TEST = re.compile(
    r"^\s*(?:not\s+self\.(?P<a>\w+)|self\.(?P<b>\w+)\s+is\s+None|"
    r"not\s+hasattr\(\s*self\s*,\s*['\"](?P<c>\w+)['\"]\s*\)|"
    r"self\.(?P<d>\w+)\s*==\s*False|"
    # `if self.length.item() == 0:` / `if self.n == 0:` (a zero sentinel, set on first use)
    r"self\.(?P<e>\w+)(?:\.item\(\))?\s*==\s*0)"
    # `if self.cache is None or self.cache.size(0) < n:` (allocated once, grown rarely);
    # `if self.n == 0 and self.limit > 0:` (a conjunction runs at most as often)
    r"(?:\s+(?:or|and)\s+.*)?\s*$",
    re.DOTALL,
)


def lazy_attribute(test_text: str) -> str | None:
    """The attribute a lazy-initialisation test checks (`built` in `not self.built`)."""
    match = LAZY_TEST.match(test_text)
    if match is None:
        return None
    return (
        match.group("a")
        or match.group("b")
        or match.group("c")
        or match.group("d")
        or match.group("e")
    )


def once_flags(test_text: str) -> list[tuple[str, bool]]:
    """The flags a run-once guard may test: each an attribute, and whether the body ends
    the guard by clearing it (`if self._first: ...; self._first = False`) rather than by
    setting it (`if not self._initialized: ...; self._initialized = True`). Reads the
    shapes of `lazy_attribute`, and, in any conjunct of an `and` or `&` (`(self._initialized
    is False) & self.training`): `self.x is False`, `not getattr(self, "x", False)`, and
    `self.x` / `self.x is True` (cleared by the body). The body decides which one it is."""
    flags: list[tuple[str, bool]] = []
    attribute = lazy_attribute(test_text)
    if attribute is not None:
        flags.append((attribute, False))
    node = _parse(test_text)
    if node is None:
        return flags
    for conjunct in _flag_conjuncts(node):
        found = _flag_test(conjunct)
        if found is not None and found not in flags:
            flags.append(found)
    return flags


def _flag_conjuncts(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return [c for value in node.values for c in _flag_conjuncts(value)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
        return _flag_conjuncts(node.left) + _flag_conjuncts(node.right)
    return [node]


def _flag_test(node: ast.expr) -> tuple[str, bool] | None:
    """One conjunct's flag (see `once_flag`)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        operand = node.operand
        if (
            isinstance(operand, ast.Call)
            and isinstance(operand.func, ast.Name)
            and operand.func.id == "getattr"
            and len(operand.args) >= 2
            and isinstance(operand.args[0], ast.Name)
            and operand.args[0].id == "self"
            and isinstance(operand.args[1], ast.Constant)
            and isinstance(operand.args[1].value, str)
        ):
            return operand.args[1].value, False
        attribute = self_attribute_name(operand)
        return (attribute, False) if attribute is not None else None
    attribute = self_attribute_name(node)
    if attribute is not None:
        return attribute, True
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], (ast.Is, ast.Eq))
        and isinstance(node.comparators[0], ast.Constant)
        and isinstance(node.comparators[0].value, bool)
    ):
        attribute = self_attribute_name(node.left)
        if attribute is not None:
            return attribute, node.comparators[0].value is True
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.Is)
        and isinstance(node.comparators[0], ast.Constant)
        and node.comparators[0].value is None
    ):
        attribute = self_attribute_name(node.left)
        return (attribute, False) if attribute is not None else None
    return None


def ends_flag(value: object, clears: bool) -> bool:
    """Whether setting a run-once flag to `value` (a constant's value, or `...` for an
    expression that is not a constant) ends its guard: a body that clears it must set a
    false constant (`False`, `None`, `0`); one that sets it anything else."""
    falsy = value is not ... and not value
    return falsy if clears else not falsy


def rearms_flag(value: object, clears: bool) -> bool:
    """Whether setting the flag to `value` elsewhere makes its guard hold again
    (`self._initialized = False` in a method that runs every step): only a constant does."""
    return value is not ... and not ends_flag(value, clears)


# In-place methods that set a tensor flag (a registered buffer) to a new value.
_FLAG_SETTERS = frozenset({"fill_", "copy_"})


def _flag_named(node: ast.expr, attribute: str) -> bool:
    """`self.<attribute>`, or its `.data`."""
    if isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    return self_attribute_name(node) == attribute


def _constant(node: ast.expr) -> object:
    """A constant's value, or `...` for any other expression."""
    return node.value if isinstance(node, ast.Constant) else ...


def _flag_set(statement: ast.stmt, attribute: str) -> ast.expr | bool | None:
    """What a statement sets `self.<attribute>` to (an assignment, `setattr(self, "x", v)`,
    `self.x.fill_(v)`): the value, True for an in-place copy (`copy_`), None otherwise."""
    if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if any(_flag_named(t, attribute) for t in targets):
            return statement.value
        return None
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return None
    call = statement.value
    if (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in _FLAG_SETTERS
        and _flag_named(call.func.value, attribute)
    ):
        return call.args[0] if call.func.attr == "fill_" and call.args else True
    if (
        isinstance(call.func, ast.Name)
        and call.func.id == "setattr"
        and len(call.args) >= 3
        and isinstance(call.args[0], ast.Name)
        and call.args[0].id == "self"
        and isinstance(call.args[1], ast.Constant)
        and call.args[1].value == attribute
    ):
        return call.args[2]
    return None


def always_sets_flag(
    body: list[ast.stmt],
    attribute: str,
    clears: bool,
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
    depth: int = 0,
) -> bool:
    """Whether every path through `body` sets `self.<attribute>` to a value that ends its
    run-once guard (`guards.ends_flag`): a statement of the body itself, both branches of
    an `if`, the body of a `with` or `try`, or a method of the class it calls
    (`self._init_from_batch(x)`) that does. A set in one branch only leaves the guard
    holding on the other paths: the block may run every step."""
    for statement in body:
        value = _flag_set(statement, attribute)
        if value is True:
            if not clears:
                return True
        elif isinstance(value, ast.expr):
            if ends_flag(_constant(value), clears):
                return True
        elif isinstance(statement, ast.If):
            if always_sets_flag(
                statement.body, attribute, clears, methods, depth
            ) and always_sets_flag(statement.orelse, attribute, clears, methods, depth):
                return True
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            if always_sets_flag(statement.body, attribute, clears, methods, depth):
                return True
        elif isinstance(statement, ast.Try):
            if always_sets_flag(
                statement.body, attribute, clears, methods, depth
            ) or always_sets_flag(statement.finalbody, attribute, clears, methods, depth):
                return True
        elif (
            depth < 3
            and isinstance(statement, (ast.Expr, ast.Assign))
            and isinstance(statement.value, ast.Call)
            and isinstance(statement.value.func, ast.Attribute)
            and isinstance(statement.value.func.value, ast.Name)
            and statement.value.func.value.id == "self"
            and statement.value.func.attr in methods
        ):
            method = methods[statement.value.func.attr]
            if always_sets_flag(method.body, attribute, clears, methods, depth + 1):
                return True
    return False


def rearmed_elsewhere(
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
    attribute: str,
    clears: bool,
    inside: set[int],
) -> bool:
    """Whether a method of the class other than `__init__` sets the flag back to a constant
    that makes its guard hold again (`self._initialized = False` in a step or an epoch
    hook), outside the guarded block (`inside`, ids of its nodes): the block is re-run."""
    for name, method in methods.items():
        if name == "__init__":
            continue
        for node in ast_walk(method):
            if id(node) in inside or not isinstance(node, ast.stmt):
                continue
            value = _flag_set(node, attribute)
            if isinstance(value, ast.expr) and rearms_flag(_constant(value), clears):
                return True
    return False


def done_attribute(exit_test_text: str) -> str | None:
    """The attribute an early exit tests for a finished one-time initialisation (`initialized`
    in `if self.initialized: return`, `cache` in `if self.cache is not None: return`): the
    code after the exit runs under the negated test, the lazy-initialisation test that
    `lazy_attribute` reads."""
    text = exit_test_text.strip()
    if text.endswith(" is not None"):
        negated = text[: -len(" is not None")] + " is None"
    elif re.fullmatch(r"self\.\w+(?:\.item\(\))?", text):
        negated = f"not {text.removesuffix('.item()')}"
    else:
        return None
    return lazy_attribute(negated)


# --- shapes read from the condition's syntax (both walkers pass source text) ------------

# A divisor that is the cadence of every optimizer step or a split across devices, not of a
# rare event: `steps % accumulate_grad_batches == 0` runs on every optimizer step,
# `i % world_size == rank` on this device's share of every batch.
_PER_STEP_DIVISOR = re.compile(r"accum|world|rank|replica|devices|cores|gpus|procs", re.I)
# A dividend that counts optimizer steps (stands still in evaluation code).
_STEP_DIVIDEND = re.compile(r"step", re.IGNORECASE)
# Growing a container or a counter: `self.x.append(...)`, `self.x += ...`, `self.x[k] = v`.
_GROW = (
    r"(?:\.(?:append|extend|add|insert|update|put|appendleft)\s*\(|\s*\+=|\[[^\]\n]*\]\s*=(?!=))"
)


def _parse(text: str) -> ast.expr | None:
    try:
        return ast.parse(f"(\n{text}\n)", mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None


def _conjuncts(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return [c for value in node.values for c in _conjuncts(value)]
    return [node]


def _modulo(node: ast.expr) -> ast.BinOp | None:
    return node if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) else None


def _periodic_kind(modulo: ast.BinOp) -> str | None:
    """`counter % divisor`: "rare" (or "rare-train" for a step counter) when the divisor is
    a setting (a name or attribute) or a literal of 4 or more; None for `% 2`, `% 3` and
    cadences that are per step (gradient accumulation, devices)."""
    divisor = modulo.right
    if isinstance(divisor, ast.Constant):
        if type(divisor.value) is not int or divisor.value < 4:
            return None
    elif isinstance(divisor, (ast.Name, ast.Attribute, ast.Subscript)):
        if _PER_STEP_DIVISOR.search(ast.unparse(divisor)):
            return None
    else:
        return None
    dividend = ast.unparse(modulo.left)
    if isinstance(modulo.left, ast.Constant) or _PER_STEP_DIVISOR.search(dividend):
        return None
    return RARE_TRAIN if _STEP_DIVIDEND.search(dividend) else RARE


def _periodic(node: ast.expr, negated: bool) -> str | None:
    """The kind of a periodic test (`step % n == 0`, `not i % n`; under `negated`, the code
    runs where the test fails: `if step % n: return`, `if step % n != 0: continue`)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _periodic(node.operand, not negated)
    modulo = _modulo(node)
    if modulo is not None:  # `if step % n:` is true on most steps
        return _periodic_kind(modulo) if negated else None
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = node.left, node.comparators[0]
        modulo = _modulo(left) or _modulo(right)
        if modulo is None:
            return None
        if isinstance(node.ops[0], ast.Eq) and not negated:
            return _periodic_kind(modulo)
        if isinstance(node.ops[0], ast.NotEq) and negated:
            return _periodic_kind(modulo)
    return None


def _self_method_call(node: ast.expr) -> str | None:
    """`self.<name>()` with no arguments: the name."""
    if (
        isinstance(node, ast.Call)
        and not node.args
        and not node.keywords
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    ):
        return node.func.attr
    return None


def shape_kinds(
    text: str,
    negated: bool = False,
    predicate: Callable[[str], str | None] | None = None,
) -> frozenset[str]:
    """Guard kinds a condition's syntax says: a periodic test (`step_count % log_freq == 0`,
    `not i % 10`), a test for the last batch of the epoch (`i == len(loader) - 1`,
    `batch_count == num_batches`), a numeric anomaly (`torch.isnan(loss).any()`), and a
    boolean method of the class that returns one (`if self._should_log():`), read through
    `and`, `or` and `not`: the code under `a and b % n == 0` runs only where the periodic
    conjunct holds, under `i % n == 0 or i == n_batches - 1` only where one of two rare
    tests does. `negated`: the code runs where the test fails (after `if TEST: return`).
    `predicate(name)` is the source text of what method `name` of the class returns, if it
    is a single `return EXPR`."""
    anomaly = _NONFINITE.search(text) is not None
    if (
        "%" not in text
        and not anomaly
        and (predicate is None or "self." not in text)
        and not _EPOCH_END_SCREEN.search(text)
        and not STEP_COUNTER.search(text)
    ):
        return frozenset()
    node = _parse(text)
    if node is None:
        return frozenset()
    return frozenset(_kinds_where(node, not negated, anomaly, predicate))


def _first_steps(node: ast.expr, holds: bool) -> bool:
    """`self.global_step < 5` (`<=`, or `5 > self.global_step`), where it holds, or
    `global_step >= 5` where it fails: the first steps of the run only. The count only grows,
    so the code runs in a few training steps and in the validations among them (a sanity
    check), never again; a bound that is not a literal (`< self.warmup_steps`) says nothing."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return False
    left, op, right = node.left, node.ops[0], node.comparators[0]
    if isinstance(left, ast.Constant):  # `5 > self.global_step`
        flipped = {ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Lt: ast.Gt, ast.LtE: ast.GtE}
        left, right = right, left
        op = flipped.get(type(op), type(op))()
    if not (
        isinstance(right, ast.Constant)
        and type(right.value) is int
        and STEP_COUNTER.fullmatch(_last_part(left) or "")
    ):
        return False
    below = isinstance(op, (ast.Lt, ast.LtE))
    above = isinstance(op, (ast.Gt, ast.GtE))
    return (below and holds) or (above and not holds)


def _last_part(node: ast.expr) -> str | None:
    """`global_step` of `self.trainer.global_step` and of `global_step`."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _kinds_where(
    node: ast.expr,
    holds: bool,
    anomaly: bool,
    predicate: Callable[[str], str | None] | None,
    names: bool = False,
) -> set[str]:
    """The guard kinds of the code that runs where `node` evaluates to `holds` (with
    `names`, those of its rare names too, each on its rare side)."""
    if anomaly and _nonfinite_test(node, holds):
        return {RARE}  # the NaN/inf recovery branch: a numeric anomaly, not every step
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _kinds_where(node.operand, not holds, anomaly, predicate, names)
    if isinstance(node, ast.BoolOp):
        parts = [_kinds_where(value, holds, anomaly, predicate, names) for value in node.values]
        if isinstance(node.op, ast.And) == holds:
            # Every operand holds (`a and b`) or every one fails (`not (a or b)`): each
            # operand's guard applies.
            return set().union(*parts)
        # One operand is enough (`a or b`, `not (a and b)`): rare only if each one is, and
        # only as rare as the least rare of them.
        if not all(parts):
            return set()
        if all(RARE in part for part in parts):
            return {RARE}
        return {RARE_TRAIN}
    kinds: set[str] = set()
    if names:
        named = _name_kinds(ast.unparse(node))
        side = _names_rare_side(node) if named else None
        if side is None or side == holds:
            kinds |= named
    kind = _periodic(node, not holds) or (_epoch_end(node) if holds else None)
    if kind is not None:
        return kinds | {kind}
    if _first_steps(node, holds):
        return kinds | {RARE}
    name = _self_method_call(node) if holds and predicate is not None else None
    returned = predicate(name) if predicate is not None and name is not None else None
    if returned is not None:
        return kinds | set(condition_kinds(returned) - {DEVICE})
    return kinds


# What may name the number of batches of an epoch (`len(loader)`, `steps_per_epoch`).
_EPOCH_END_SCREEN = re.compile(r"==.*(?:batch|step|iter|epoch|len\()", re.IGNORECASE | re.DOTALL)
# A count of an epoch's batches or steps, by its last name: named for the epoch
# (`num_batches_per_epoch`, `steps_per_epoch`, `epoch_length`) or Lightning's trainer counts
# (`self.trainer.num_training_batches`). A bare `num_steps` or `n_batches` may count the
# iterations of a loop inside the step (diffusion steps, micro-batches): its last one runs
# every step.
_EPOCH_COUNT = re.compile(
    r"\w*(?:batch(?:es)?|steps?|iter(?:ation)?s?)_(?:per|in)_epoch"
    r"|epoch_(?:len(?:gth)?|size|steps|batches)|len_epoch"
    r"|num_(?:training|train|val|validation|test)_batches",
    re.IGNORECASE,
)
# What `len(...)` of is an epoch's batches (`len(train_loader)`, `len(self.dataloader)`).
_LOADER = re.compile(r"loader", re.IGNORECASE)


def _epoch_end(node: ast.expr) -> str | None:
    """The kind of a test for the last batch (or step) of an epoch, `counter == count`
    with the count `len(<a loader>)` or named for an epoch's batches or steps (a name or
    attribute), either side offset by a literal (`i == len(loader) - 1`,
    `batch_count == num_batches_per_epoch`, `(step + 1) == steps_per_epoch`): it holds once
    per epoch. "rare-train" for a counter of optimizer steps (it stands still in evaluation
    code)."""
    if not isinstance(node, ast.Compare) or len(node.ops) != 1:
        return None
    if not isinstance(node.ops[0], ast.Eq):
        return None
    sides = [_strip_offset(node.left), _strip_offset(node.comparators[0])]
    for count, counter in (sides, sides[::-1]):
        if not _is_epoch_count(count) or isinstance(counter, ast.Constant):
            continue
        if _is_epoch_count(counter) or not isinstance(
            counter, (ast.Name, ast.Attribute, ast.Subscript)
        ):
            continue
        return RARE_TRAIN if _STEP_DIVIDEND.search(ast.unparse(counter)) else RARE
    return None


def _strip_offset(node: ast.expr) -> ast.expr:
    """`x` of `x + 1`, `x - 1`, `1 + x`."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        if isinstance(node.right, ast.Constant) and type(node.right.value) is int:
            return node.left
        if isinstance(node.op, ast.Add) and isinstance(node.left, ast.Constant):
            return node.right
    return node


def _is_epoch_count(node: ast.expr) -> bool:
    """`len(<a loader>)`, or a name or attribute named for an epoch's batches or steps."""
    inner = _len_argument(node)
    if inner is not None:
        return _LOADER.search(ast.unparse(inner)) is not None
    if isinstance(node, ast.Name):
        return _EPOCH_COUNT.fullmatch(node.id) is not None
    if isinstance(node, ast.Attribute):
        return _EPOCH_COUNT.fullmatch(node.attr) is not None
    return False


_NONFINITE = re.compile(r"\bis(?:nan|inf|posinf|neginf|finite)\b")


def _nonfinite_test(node: ast.expr, holds: bool) -> bool:
    """Whether the code that runs where `node` holds (`holds`) or fails runs only on a
    numeric anomaly: `torch.isnan(x).any()`, `torch.any(torch.isinf(x))`, `math.isnan(v)`
    hold, or `torch.isfinite(x).all()` fails (`if not torch.isfinite(loss):`)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _nonfinite_test(node.operand, not holds)
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return holds and any(_nonfinite_test(v, True) for v in node.values)
        return holds and all(_nonfinite_test(v, True) for v in node.values)
    if not isinstance(node, ast.Call):
        return False
    names = {
        n.attr if isinstance(n, ast.Attribute) else n.id
        for n in ast_walk(node)
        if isinstance(n, (ast.Attribute, ast.Name))
    }
    if "isfinite" in names:
        return not holds and not names & {"isnan", "isinf", "isposinf", "isneginf"}
    if names & {"isnan", "isinf", "isposinf", "isneginf"}:
        # `.any()`/`torch.any` or a Python float's test; `.all()` would hold on the common path
        # only when every element is NaN: still the anomaly
        return holds
    return False


def _bounds(test_text: str, measured_below: bool) -> Iterator[tuple[ast.expr, ast.expr]]:
    """The `(measured, bound)` sides of the one-operator comparisons among a test's `and`
    conjuncts, oriented so that `measured < bound` (`measured_below`) or `measured > bound`:
    `N > self.n` gives `(self.n, N)` for the first."""
    if "<" not in test_text and ">" not in test_text:
        return
    node = _parse(test_text)
    if node is None:
        return
    below, above = (ast.Lt, ast.LtE), (ast.Gt, ast.GtE)
    kept, swapped = (below, above) if measured_below else (above, below)
    for part in _conjuncts(node):
        if not isinstance(part, ast.Compare) or len(part.ops) != 1:
            continue
        op, left, right = part.ops[0], part.left, part.comparators[0]
        if isinstance(op, swapped):
            left, right = right, left
        elif not isinstance(op, kept):
            continue
        yield left, right


def _len_argument(node: ast.expr) -> ast.expr | None:
    """`x` of `len(x)`, else None."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "len"
        and len(node.args) == 1
    ):
        return node.args[0]
    return None


def _self_attribute_text(node: ast.expr) -> str | None:
    """`self.x` / `self.x.y` as text, else None."""
    name = ast.unparse(node)
    if isinstance(node, ast.Attribute) and re.fullmatch(r"self(\.\w+)+", name):
        return name
    return None


def _item_receiver(node: ast.expr) -> ast.expr:
    """`x` of `x.item()` (a tensor counter read as a number), else the node."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "item"
        and not node.args
        and not node.keywords
    ):
        return node.func.value
    return node


def first_n_targets(test_text: str) -> list[str]:
    """The attributes a collect-the-first-N test bounds: `self.x` in `len(self.x) < N`,
    `self.n < N`, `N > self.n` (one conjunct of an `and`). Only attributes of `self`: they
    persist across steps, so the guarded code stops running after N batches; a local counter
    bounds a loop that runs again on every step. A tensor counter read with `.item()`
    (`self.n.item() < N`) counts as well."""
    targets = []
    for measured, _ in _bounds(test_text, measured_below=True):
        name = _self_attribute_text(_len_argument(measured) or _item_receiver(measured))
        if name is not None:
            targets.append(name)
    return targets


def flush_targets(test_text: str) -> list[str]:
    """The attributes an accumulate-then-flush test bounds: `self.x` in `len(self.x) > N`,
    `self.x.shape[0] >= N`, `self.x.size(0) > N`, `N < len(self.x)` (one conjunct of an
    `and`), N a setting (a name or an attribute) or a literal of 2 or more: with a body that
    empties `self.x` (`flushes`), the body runs once every N/batch steps."""
    targets = []
    for measured, bound in _bounds(test_text, measured_below=False):
        if isinstance(bound, ast.Constant):
            if type(bound.value) is not int or bound.value < 2:
                continue
        elif not isinstance(bound, (ast.Name, ast.Attribute)):
            continue
        container = _len_argument(measured)
        if container is None and (
            isinstance(measured, ast.Subscript)
            and isinstance(measured.value, ast.Attribute)
            and measured.value.attr == "shape"
        ):
            container = measured.value.value  # `self.x.shape[0]`
        elif container is None and (
            isinstance(measured, ast.Call)
            and isinstance(measured.func, ast.Attribute)
            and measured.func.attr == "size"
            and measured.args
        ):
            container = measured.func.value  # `self.x.size(0)`
        name = None if container is None else _self_attribute_text(container)
        if name is not None:
            targets.append(name)
    return targets


def marker_targets(test_text: str) -> list[str]:
    """The attributes an elapsed-since-marker test reads: `self.last` in `now - self.last >=
    interval`, `now > self.last + interval`, `interval <= now - self.last` (one conjunct of
    an `and`). With a body that moves the marker (`resets`), the body runs once per interval
    (of epochs, steps or seconds): the marker persists across steps, so between two runs the
    test fails. A bare `x > self.best` is not one (keeping a best value runs at any rate)."""
    targets = []
    for measured, bound in _bounds(test_text, measured_below=False):
        for side, op in ((measured, ast.Sub), (bound, ast.Add)):
            if not (isinstance(side, ast.BinOp) and isinstance(side.op, op)):
                continue
            # `now - self.last`: the marker is subtracted; `self.last + interval` either way.
            operands = [side.right] if op is ast.Sub else [side.left, side.right]
            for operand in operands:
                name = _self_attribute_text(operand)
                if name is not None and name not in targets:
                    targets.append(name)
    return targets


def change_targets(test_text: str) -> list[tuple[str, str]]:
    """The `(attribute, value)` pairs of a change test: `self.current != key` or `key !=
    self.current` (one conjunct of an `and`), `key` a name, attribute or subscript. With a
    body that records the value (`records`: `self.current = key`), the body runs once per
    change of `key` (a new dataloader, a new case), not on every batch: after it, the test
    fails until `key` changes."""
    if "!=" not in test_text:
        return []
    node = _parse(test_text)
    if node is None:
        return []
    pairs = []
    for part in _conjuncts(node):
        if not isinstance(part, ast.Compare) or len(part.ops) != 1:
            continue
        if not isinstance(part.ops[0], ast.NotEq):
            continue
        left, right = part.left, part.comparators[0]
        for attribute, value in ((left, right), (right, left)):
            name = _self_attribute_text(attribute)
            if name is not None and isinstance(value, (ast.Name, ast.Attribute, ast.Subscript)):
                pairs.append((name, ast.unparse(value)))
                break
    return pairs


def records(body_text: str, target: str, value: str) -> bool:
    """Whether code sets `target` to the compared value (`self.current = key`)."""
    pattern = rf"\b{re.escape(target)}\s*=\s*{re.escape(value)}\s*(?:$|[\n;#])"
    return re.search(pattern, body_text, re.MULTILINE) is not None


def resets(body_text: str, target: str) -> bool:
    """Whether code moves the marker `target` (`self.last = now`, `self.last += interval`)."""
    return re.search(rf"\b{re.escape(target)}\s*(?:=(?!=)|\+=)", body_text) is not None


def flushes(body_text: str, target: str) -> bool:
    """Whether code empties the container `target` (`self.x = None`, `= []`, `.clear()`)."""
    name = re.escape(target)
    return bool(
        re.search(rf"\b{name}\s*=\s*(?:None\b|\[\s*\]|\{{\s*\}}|list\(\)|dict\(\))", body_text)
        or re.search(rf"\b{name}\.clear\(\)", body_text)
    )


def grows(body_text: str, target: str) -> bool:
    """Whether code grows the container or counter `target` (`self.x.append(...)`,
    `self.n += 1`, `self.n = self.n + 1`, `self.x[k] = v`)."""
    name = re.escape(target)
    return bool(
        re.search(rf"\b{name}{_GROW}", body_text)
        or re.search(rf"\b{name}\s*=\s*{name}\s*\+", body_text)
    )


# A first-N guard on a counter of another scope: the kind a condition of the file leaves for
# the project to settle (`first_n_counters`), "first-n:NAME", NAME the attribute it bounds.
# The project makes it "rare" where any of its files increments an attribute of that name
# (`incremented_attributes`), and drops it elsewhere (a counter that never grows bounds
# nothing).
FIRST_N = "first-n:"
# Counters of training progress: they grow for the whole run and their bounds are schedules
# (`if self.global_step > self.warmup_steps: return`), read only by `_first_steps` (a
# literal bound), never as a counter of collected examples.
_PROGRESS_COUNTER = re.compile(r"step|epoch|iter", re.IGNORECASE)


def incremented_attributes(tree: ast.AST) -> set[str]:
    """The attribute names a file's code increments, on any receiver: `self.n += 1`,
    `pl_module.seen[split] += 1` (a callback counting the module's batches), `self.n =
    self.n + 1`, `self.n[k] = self.n[k] + 1`. What a first-N guard elsewhere bounds
    (`FIRST_N`) grows where the project increments an attribute of its name."""
    out: set[str] = set()
    for node in ast_walk(tree):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
            name = _counter_name(node.target)
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.value, ast.BinOp)
            and isinstance(node.value.op, ast.Add)
            and isinstance(node.targets[0], (ast.Attribute, ast.Subscript))
            and ast.unparse(node.value.left) == ast.unparse(node.targets[0])
        ):
            name = _counter_name(node.targets[0])
        else:
            continue
        if name is not None:
            out.add(name)
    return out


def _counter_name(node: ast.expr) -> str | None:
    """`n` of `x.n` and of `x.n[k]` (any receiver), else None."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return node.attr if isinstance(node, ast.Attribute) else None


def counter_aliases(before: list[ast.stmt]) -> dict[str, str]:
    """Local names the statements bind to a counter attribute of `self` (`cnt =
    self.seen[split]`, `cnt = self.seen`): name -> the attribute's name. A later binding of
    the name to anything else ends the alias."""
    aliases: dict[str, str] = {}
    for statement in before:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    name = _self_counter(statement.value)
                    if name is not None and len(statement.targets) == 1:
                        aliases[target.id] = name
                    else:
                        aliases.pop(target.id, None)
        elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)) and isinstance(
            statement.target, ast.Name
        ):
            aliases.pop(statement.target.id, None)
    return aliases


def _self_counter(node: ast.expr) -> str | None:
    """`n` of `self.n`, `self.n[k]`, `self.n.item()`, `self.n[k].item()`, else None."""
    node = _item_receiver(node)
    if isinstance(node, ast.Subscript):
        node = node.value
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return node.attr
    return None


def first_n_counters(test_text: str, holds: bool, aliases: dict[str, str]) -> list[str]:
    """The counter attributes a first-N test bounds, for the code that runs where the test
    holds (`holds`: `if self.n < N:`'s body; one conjunct of an `and`) or fails (after `if
    self.n > N: return` / `>=`, `if cnt >= N or other: return`: one operand of an `or`,
    since each one fails there). The counter is an attribute of `self` or an item of one
    (`self.seen[split]`), read directly or through a local alias bound before
    (`aliases`: `cnt = self.seen[split]`): it persists across steps, so once it passes N the
    code stops running until something resets it (an epoch-end callback). A local counter
    bound otherwise says nothing (it restarts on every call), nor does a counter of
    training progress (`global_step`, `self.epoch`: see `_first_steps`). The project settles
    whether the counter grows (`FIRST_N`)."""
    if "<" not in test_text and ">" not in test_text:
        return []
    node = _parse(test_text)
    if node is None:
        return []
    if holds:
        parts = _conjuncts(node)
    elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        parts = list(node.values)
    else:
        parts = [node]
    below, above = (ast.Lt, ast.LtE), (ast.Gt, ast.GtE)
    kept, swapped = (below, above) if holds else (above, below)
    names: list[str] = []
    for part in parts:
        if not isinstance(part, ast.Compare) or len(part.ops) != 1:
            continue
        op, measured = part.ops[0], part.left
        if isinstance(op, swapped):
            measured = part.comparators[0]
        elif not isinstance(op, kept):
            continue
        name = _self_counter(measured)
        if name is None:
            receiver = _item_receiver(measured)
            if isinstance(receiver, ast.Name):
                name = aliases.get(receiver.id)
        if name is not None and not _PROGRESS_COUNTER.search(name) and name not in names:
            names.append(name)
    return names


def first_n_guards(names: list[str]) -> tuple[str, ...]:
    """The deferred guard kinds of `first_n_counters`' names."""
    return tuple(FIRST_N + name for name in names)


def settle_first_n(
    kinds: frozenset[str] | set[str], grown: Callable[[str], bool]
) -> frozenset[str]:
    """Guard kinds with each deferred first-N kind settled: "rare" where the project grows the
    counter (`grown(name)`), dropped where it does not."""
    if not any(kind.startswith(FIRST_N) for kind in kinds):
        return frozenset(kinds)
    out = {kind for kind in kinds if not kind.startswith(FIRST_N)}
    if any(grown(kind[len(FIRST_N) :]) for kind in kinds if kind.startswith(FIRST_N)):
        out.add(RARE)
    return frozenset(out)
