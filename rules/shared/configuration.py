"""Helpers shared by the Trainer-configuration, precision, torch_xla-API and opt-in rules.

- What makes a Trainer (or a LightningCLI `trainer:` section) a TPU one.
- Framework files (Lightning's own source), version-gated compatibility code.
- Environment-variable accesses (`os.environ[...] = ...`, `os.environ.setdefault(...)`).
- Import migrations that also work when the import is not a top-level statement
  (`if _XLA_AVAILABLE: import torch_xla.core.xla_model as xm`, imports inside functions).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.imports import module_name_of
from tpulint.analysis.project import LIGHTNING_ROOTS
from tpulint.analysis.yaml_config import YamlEntry
from tpulint.datatypes.diagnostics import Applicability
from tpulint.datatypes.roundtrip import physical_lines
from tpulint.rule_api.cst_helpers import int_value, keyword_arg, string_value
from tpulint.rule_api.rule import FixSpec, ImportSpec

from .matchers import LEGACY_TPU_KEYWORDS, walk

# --- versions ----------------------------------------------------------------------------


def version_tuple(text: str | None) -> tuple[int, ...]:
    parts = []
    for piece in (text or "0").split("."):
        digits = re.match(r"\d+", piece)
        parts.append(int(digits.group(0)) if digits else 0)
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts[:3])


def lightning_at_least(ctx_or_config: object, version: str) -> bool:
    config = getattr(ctx_or_config, "config", ctx_or_config)
    return version_tuple(getattr(config, "lightning_version", "2.6")) >= version_tuple(version)


def torch_xla_version(ctx: FileContext) -> tuple[int, ...]:
    return version_tuple(getattr(ctx.config, "torch_xla_version", "2.9"))


# --- strings -----------------------------------------------------------------------------


def with_string_value(node: cst.SimpleString, value: str) -> cst.SimpleString:
    """`node` with a new value, keeping its prefix and quote style."""
    prefix_end = 0
    while node.value[prefix_end] not in "\"'":
        prefix_end += 1
    prefix = node.value[:prefix_end]
    quote = node.value[prefix_end : prefix_end + 3]
    if quote not in ('"""', "'''"):
        quote = node.value[prefix_end]
    return node.with_changes(value=f"{prefix}{quote}{value}{quote}")


def literal_value(node: cst.BaseExpression | None) -> object:
    """An int or str literal's value (also `-1`), else None."""
    if node is None:
        return None
    value = int_value(node)
    if value is not None:
        return value
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = int_value(node.expression)
        return -inner if inner is not None else None
    return string_value(node)


# --- framework code and compatibility branches -------------------------------------------


def is_framework_file(ctx: FileContext) -> bool:
    """Lightning's own source (`lightning.*`, `pytorch_lightning.*`, `lightning_fabric.*`):
    its strategy plumbing, precision plugins and deprecation shims name the legacy APIs on
    purpose and are not user code."""
    module = ctx.aliases.module or ""
    return module.split(".", 1)[0] in LIGHTNING_ROOTS


# Conditions that choose an API by version (`_XLA_GREATER_EQUAL_2_1`, `version.parse(...)`,
# `hasattr(xm, "xrt_world_size")`). Availability checks (`if _XLA_AVAILABLE:`) are not: the
# code under them still runs on TPU hosts.
_VERSION_TEST = re.compile(
    r"(?i)(version|_greater|_less|_ge_|_gt_|_lt_|_le_|_\d+_\d+\b|hasattr|packaging)"
)


def version_gated(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Compatibility code that picks an API by version: under (or after an early return
    from) an `if` on a version flag or `hasattr`, or in an `except AttributeError/ImportError`
    handler of a `try` that tries the new API first."""
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.If, cst.IfExp)) and child is not ancestor.test:
            if _VERSION_TEST.search(ctx.module.code_for_node(ancestor.test)):
                return True
        elif isinstance(ancestor, cst.ExceptHandler):
            if ancestor.type is not None and re.search(
                r"AttributeError|ImportError|ModuleNotFoundError",
                ctx.module.code_for_node(ancestor.type),
            ):
                return True
        elif isinstance(ancestor, (cst.IndentedBlock, cst.Module)):
            for statement in ancestor.body:
                if statement is child:
                    break
                test = _early_exit_test(statement)
                if test is not None and _VERSION_TEST.search(ctx.module.code_for_node(test)):
                    return True
        elif isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        child = ancestor
    return False


def _early_exit_test(statement: cst.CSTNode) -> cst.BaseExpression | None:
    """`if TEST: ... return/raise` with no else: later code runs under `not TEST`."""
    if not isinstance(statement, cst.If) or statement.orelse is not None:
        return None
    body = statement.body
    last = body.body[-1] if isinstance(body, cst.IndentedBlock) and body.body else None
    if isinstance(body, cst.SimpleStatementSuite):
        small = body.body
    elif isinstance(last, cst.SimpleStatementLine):
        small = last.body
    else:
        return None
    if small and isinstance(small[-1], (cst.Return, cst.Raise)):
        return statement.test
    return None


_DEVICE_TEST = re.compile(r"(?i)(cuda|gpu|device|accelerator|xla|tpu|nvidia|mps)")


def device_guarded(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Under a condition about the device (`if torch.cuda.is_available():`,
    `x if self.device.type == "cuda" else y`, `if self.use_gpu:`), including `ctx.guards`'
    "device-check" (which also sees early returns)."""
    if "device-check" in ctx.guards(node):
        return True
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.If, cst.IfExp, cst.While)) and child is not ancestor.test:
            if _DEVICE_TEST.search(ctx.module.code_for_node(ancestor.test)):
                return True
        elif isinstance(ancestor, cst.BooleanOperation) and child is ancestor.right:
            if _DEVICE_TEST.search(ctx.module.code_for_node(ancestor.left)):
                return True
        elif isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        child = ancestor
    return False


# --- TPU Trainers --------------------------------------------------------------------------

XLA_STRATEGY_NAMES = frozenset(
    {"xla", "xla_debug", "xla_fsdp", "single_xla", "tpu_spawn", "tpu_spawn_debug", "single_tpu"}
)
XLA_STRATEGY_CLASSES = frozenset(
    {
        "XLAStrategy",
        "XLAFSDPStrategy",
        "SingleDeviceXLAStrategy",
        "TPUSpawnStrategy",
        "SingleTPUStrategy",
        "XLAAccelerator",
        "TPUAccelerator",
    }
)


def is_lightning_name(ctx: FileContext, node: cst.BaseExpression, names: frozenset[str]) -> bool:
    qualified = ctx.qualify(node)
    if qualified is None:
        return False
    return qualified.split(".", 1)[0] in LIGHTNING_ROOTS and qualified.rsplit(".", 1)[-1] in names


def strategy_is_xla(ctx: FileContext, value: cst.BaseExpression) -> bool:
    text = string_value(value)
    if text is not None:
        return text.lower() in XLA_STRATEGY_NAMES
    if isinstance(value, cst.Call):
        value = value.func
    return is_lightning_name(ctx, value, XLA_STRATEGY_CLASSES)


# --- values that are not literals ------------------------------------------------------------

_UNKNOWN = object()  # a value that is not a literal
CLI_VALUE = object()  # whatever the command line passes (an argparse option)
# The candidate standing for the command line's value.
COMMAND_LINE = cst.Ellipsis()


def candidates(
    ctx: FileContext, node: cst.BaseExpression, depth: int = 0
) -> list[cst.BaseExpression] | None:
    """The expressions a value may be at run time, as far as the file shows: both branches
    of `a if c else b` (and of `a or b`), every assignment of a local or module-level name,
    the argparse default of `args.x` (`parser.add_argument("--x", default=...)`,
    `set_defaults(x=...)`). None when some possibility is not visible."""
    if depth > 6:
        return None
    d = depth + 1
    if isinstance(node, cst.IfExp):
        body, orelse = candidates(ctx, node.body, d), candidates(ctx, node.orelse, d)
        return None if body is None or orelse is None else body + orelse
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.Or):
        left, right = candidates(ctx, node.left, d), candidates(ctx, node.right, d)
        return None if left is None or right is None else left + right
    if isinstance(node, cst.Name) and node.value not in ("None", "True", "False"):
        values = _assigned_values(ctx, node)
        if not values:
            return None
        out: list[cst.BaseExpression] = []
        for value in values:
            found = candidates(ctx, value, d)
            if found is None:
                return None
            out += found
        return out
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        defaults = argparse_defaults(ctx).get(node.attr.value)
        if defaults:
            # The default, or whatever the command line passes.
            return [*defaults, COMMAND_LINE]
        return None
    if isinstance(node, (cst.Integer, cst.SimpleString, cst.Float, cst.List, cst.Tuple)):
        return [node]
    if isinstance(node, cst.Name):
        return [node]  # None / True / False
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return [node]
    return None


def assigned_values(ctx: FileContext, name: cst.Name) -> list[cst.BaseExpression]:
    """Every value assigned to `name` where it is read (see _assigned_values)."""
    return _assigned_values(ctx, name)


def _assigned_values(ctx: FileContext, name: cst.Name) -> list[cst.BaseExpression]:
    """Every value assigned to `name` in the enclosing function (or at module level, for a
    module-level name or one the function does not assign); parameter defaults count."""
    cache = ctx.shared.setdefault("assigned_values", {})
    function = None
    linked = False
    for ancestor in ctx.ancestors(name):
        linked = True
        if isinstance(ancestor, cst.FunctionDef):
            function = ancestor
            break
    if not linked:
        # A node below the walk's position (`accelerator=accelerator` seen from the
        # Trainer call): its parent links are not made yet.
        function = _enclosing_function(ctx, name)
    key = (id(function), name.value)
    if key in cache:
        return cache[key]
    values: list[cst.BaseExpression] = []
    if function is not None:
        params = function.params
        for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
            if param.name.value == name.value:
                values = [param.default] if param.default is not None else []
                if param.default is None:
                    cache[key] = [name]  # an argument without a default: not visible
                    return [name]
        values += _assignments(function.body, name.value, module=ctx.module)
    if not values:
        values = _assignments(ctx.module, name.value, top_level_only=True, module=ctx.module)
    cache[key] = values
    return values


def _enclosing_function(ctx: FileContext, node: cst.CSTNode) -> cst.FunctionDef | None:
    """The innermost function around `node`: from the walk's parent links when the walk has
    linked `node`, else from parent links of the whole module (made once per file, when
    first needed: the walk links a node's children only when it reaches the node)."""
    if id(node) in ctx.parents:
        return next((a for a in ctx.ancestors(node) if isinstance(a, cst.FunctionDef)), None)
    parents = ctx.shared.get("all_parents")
    if parents is None:
        from tpulint.analysis.walker import iter_children

        parents = {}
        stack: list[cst.CSTNode] = [ctx.module]
        while stack:
            current = stack.pop()
            for child in iter_children(current):
                parents[id(child)] = current
                stack.append(child)
        ctx.shared["all_parents"] = parents
    current = parents.get(id(node))
    while current is not None:
        if isinstance(current, cst.FunctionDef):
            return current
        current = parents.get(id(current))
    return None


def _returned_elements(
    module: cst.Module, call: cst.BaseExpression, index: int, size: int
) -> list[cst.BaseExpression] | None:
    """`a, b, c = settings(args)` with `settings` a function of the file whose every
    `return` is a tuple of `size` elements (`return "tpu", 8, "xla"`): the element at `index`
    of each (one level of call return). None when the file does not show it."""
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Name):
        return None
    defs = [
        statement
        for statement in module.body
        if isinstance(statement, cst.FunctionDef) and statement.name.value == call.func.value
    ]
    if len(defs) != 1:
        return None
    from tpulint.analysis.walker import iter_children

    returns: list[cst.Return] = []
    stack: list[cst.CSTNode] = [defs[0].body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Return):
            returns.append(node)
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.BaseExpression)):
            continue
        stack.extend(iter_children(node))
    out: list[cst.BaseExpression] = []
    for statement in returns:
        value = statement.value
        if not isinstance(value, cst.Tuple) or len(value.elements) != size:
            return None
        if any(isinstance(e, cst.StarredElement) for e in value.elements):
            return None
        out.append(value.elements[index].value)
    return out or None


def _assignments(
    root: cst.CSTNode, name: str, top_level_only: bool = False, module: cst.Module | None = None
) -> list[cst.BaseExpression]:
    out: list[cst.BaseExpression] = []
    stack: list[cst.CSTNode] = [root]
    from tpulint.analysis.walker import iter_children

    while stack:
        node = stack.pop()
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name) and target.target.value == name:
                    out.append(node.value)
                elif isinstance(target.target, cst.Tuple) and module is not None:
                    elements = target.target.elements
                    for index, element in enumerate(elements):
                        if isinstance(element.value, cst.Name) and element.value.value == name:
                            found = _returned_elements(module, node.value, index, len(elements))
                            out += found or []
        elif (
            isinstance(node, cst.AnnAssign)
            and node.value is not None
            and isinstance(node.target, cst.Name)
            and node.target.value == name
        ):
            out.append(node.value)
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and (
            top_level_only or node is not root
        ):
            continue
        if isinstance(node, cst.BaseExpression):
            continue
        stack.extend(iter_children(node))
    return out


def option_dest(call: cst.Call) -> str | None:
    """The attribute an argparse `add_argument(...)` call fills: its `dest=`, else its
    first long option (`--n-tpu-cores` -> `n_tpu_cores`), else its first short one."""
    dest_arg = keyword_arg(call, "dest")
    dest = string_value(dest_arg.value) if dest_arg is not None else None
    if dest is not None:
        return dest
    options = [string_value(a.value) for a in call.args if a.keyword is None]
    longs = [o for o in options if o and o.startswith("--")]
    shorts = [o for o in options if o and o.startswith("-") and not o.startswith("--")]
    chosen = longs[0][2:] if longs else (shorts[0][1:] if shorts else None)
    return chosen.replace("-", "_") if chosen else None


def argparse_defaults(ctx: FileContext) -> dict[str, list[cst.BaseExpression]]:
    """`dest -> [default, ...]` for the argparse options the file defines: the default
    (`None` when not given, `False` for `store_true`) and `set_defaults(...)` values."""
    cached = ctx.shared.get("argparse_defaults")
    if cached is not None:
        return cached
    out: dict[str, list[cst.BaseExpression]] = {}
    for node in walk(ctx.module):
        if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
            continue
        method = node.func.attr.value
        if method == "set_defaults":
            for arg in node.args:
                if arg.keyword is not None:
                    out.setdefault(arg.keyword.value, []).append(arg.value)
            continue
        if method != "add_argument":
            continue
        dest = option_dest(node)
        if not dest:
            continue
        default = keyword_arg(node, "default")
        action = keyword_arg(node, "action")
        if default is not None:
            value: cst.BaseExpression = default.value
        elif action is not None and string_value(action.value) == "store_true":
            value = cst.Name("False")
        else:
            value = cst.Name("None")
        out.setdefault(dest, []).append(value)
    ctx.shared["argparse_defaults"] = out
    return out


def literal_candidates(ctx: FileContext, node: cst.BaseExpression) -> list[object] | None:
    """The literal values (`literal_value`, None for `None`) a value may take, or None when
    one of them is not a literal."""
    found = candidates(ctx, node)
    if found is None:
        return None
    out: list[object] = []
    for value in found:
        if value is COMMAND_LINE:
            out.append(CLI_VALUE)
            continue
        if isinstance(value, cst.Name) and value.value in ("None", "True", "False"):
            out.append({"None": None, "True": True, "False": False}[value.value])
            continue
        literal = literal_value(value)
        if literal is None and isinstance(value, (cst.List, cst.Tuple)):
            literal = tuple(literal_value(e.value) for e in value.elements)
        if literal is None:
            return None
        out.append(literal)
    return out


# --- TPU Trainers ------------------------------------------------------------------------------

_NOT_TPU_ACCELERATORS = frozenset({"gpu", "cuda", "cpu", "mps", "ipu", "hpu"})
# Lightning 1.x took strategies as `accelerator=` ("ddp" meant DDP on GPUs or CPUs): a
# Trainer given one of these does not run on TPUs, whatever its `tpu_cores` says.
_LEGACY_NON_TPU_ACCELERATORS = frozenset(
    {"ddp", "ddp_spawn", "ddp2", "dp", "ddp_cpu", "horovod", "ddp_sharded", "deepspeed"}
)


def trainer_tpu(ctx: FileContext, call: cst.Call) -> str:
    """How surely a Trainer call runs on TPUs: "yes" (`accelerator="tpu"`, `tpu_cores=8`, an
    XLA strategy), "maybe" (`accelerator="tpu" if use_tpu else "gpu"`, `tpu_cores=args.tpu`
    whose default may be None), "no" (`accelerator="gpu"`, `gpus=1`, `tpu_cores=None`), or
    "unknown" (nothing says: `accelerator="auto"` or no accelerator)."""
    verdicts: list[str] = []
    accelerator = keyword_arg(call, "accelerator")
    if accelerator is not None:
        if string_value(accelerator.value) is None and strategy_is_xla(ctx, accelerator.value):
            return "yes"
        values = literal_candidates(ctx, accelerator.value)
        if values is not None:
            lowered = {v.lower() for v in values if isinstance(v, str)}
            open_ended = any(not isinstance(v, str) for v in values)
            if lowered == {"tpu"} and not open_ended:
                return "yes"
            if "tpu" in lowered:
                verdicts.append("maybe")
            elif lowered and lowered <= _LEGACY_NON_TPU_ACCELERATORS and not open_ended:
                strategy = keyword_arg(call, "strategy")
                if strategy is None or not strategy_is_xla(ctx, strategy.value):
                    return "no"
            elif lowered <= _NOT_TPU_ACCELERATORS and not open_ended:
                verdicts.append("no")
        else:
            verdicts.append("maybe" if _mentions_tpu(ctx, accelerator.value) else "unknown")
    strategy = keyword_arg(call, "strategy")
    if strategy is not None and strategy_is_xla(ctx, strategy.value):
        return "yes"
    for keyword in LEGACY_TPU_KEYWORDS:
        arg = keyword_arg(call, keyword)
        if arg is None:
            continue
        values = literal_candidates(ctx, arg.value)
        if values is None:
            verdicts.append("maybe")
        elif all(v in (None, 0) for v in values):
            verdicts.append("no")
        elif any(v in (None, 0) or v is CLI_VALUE for v in values):
            verdicts.append("maybe")
        else:
            return "yes"
    gpus = keyword_arg(call, "gpus")
    if gpus is not None and "maybe" not in verdicts:
        values = literal_candidates(ctx, gpus.value)
        if values and all(v not in (None, 0, "0") and v is not CLI_VALUE for v in values):
            verdicts.append("no")
    if "maybe" in verdicts:
        return "maybe"
    if "no" in verdicts:
        return "no"
    return "unknown"


def _mentions_tpu(ctx: FileContext, node: cst.BaseExpression) -> bool:
    return bool(re.search(r"(?i)tpu|xla", ctx.module.code_for_node(node)))


def trainer_is_tpu(ctx: FileContext, call: cst.Call) -> bool:
    """A Trainer call that asks for TPUs, or may: `accelerator="tpu"`, a legacy `tpu_cores`
    that is not None, an XLA strategy (`strategy="xla"`, `XLAStrategy(...)`, the legacy
    `"tpu_spawn"`), or a conditional that can be one of those."""
    return trainer_tpu(ctx, call) in ("yes", "maybe")


def tpu_arguments(ctx: FileContext, node: cst.CSTNode) -> dict[str, cst.BaseExpression] | None:
    """The entries of a dict literal or `dict(...)` call of Trainer (or Fabric) arguments
    that ask for TPUs (`"accelerator": "tpu"`, an XLA strategy), by key, for configs built
    as dictionaries and splatted into `Trainer(**cfg)`; None for any other dict. The keys
    `accelerator` and `strategy` only name Lightning arguments, so such a dict is one."""
    entries: dict[str, cst.BaseExpression] = {}
    if isinstance(node, cst.Dict):
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                key = string_value(element.key)
                if key is not None:
                    entries[key] = element.value
    elif (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value == "dict"
        and "dict" not in ctx.aliases.bindings
    ):
        for arg in node.args:
            if arg.keyword is not None:
                entries[arg.keyword.value] = arg.value
    else:
        return None
    accelerator = entries.get("accelerator")
    strategy = entries.get("strategy")
    if accelerator is not None and (string_value(accelerator) or "").lower() == "tpu":
        return entries
    if strategy is not None and strategy_is_xla(ctx, strategy):
        return entries
    return None


def yaml_strategy_is_xla(strategy: YamlEntry | None) -> bool:
    """`strategy: xla`, `strategy: {class_path: ...XLAStrategy}` or `strategy: {name: xla}`."""
    if strategy is None:
        return False
    value = strategy.value
    if isinstance(value, str) and value.lower() in XLA_STRATEGY_NAMES:
        return True
    class_path = strategy.child("class_path")
    if class_path is not None and str(class_path.value).rsplit(".", 1)[-1] in XLA_STRATEGY_CLASSES:
        return True
    name = strategy.child("name")
    return name is not None and str(name.value).lower() in XLA_STRATEGY_NAMES


def yaml_trainer_is_tpu(trainer: YamlEntry) -> bool:
    accelerator = trainer.child("accelerator")
    if accelerator is not None:
        value = accelerator.value
        if isinstance(value, str) and value.lower() == "tpu":
            return True
        class_path = accelerator.child("class_path")
        if (
            class_path is not None
            and str(class_path.value).rsplit(".", 1)[-1] in XLA_STRATEGY_CLASSES
        ):
            return True
    if any(trainer.child(k) is not None for k in LEGACY_TPU_KEYWORDS):
        return True
    return yaml_strategy_is_xla(trainer.child("strategy"))


def imports_torch_xla(ctx: FileContext) -> bool:
    return any(target.split(".", 1)[0] == "torch_xla" for target in ctx.aliases.bindings.values())


class TpuFileScan:
    """Whether a file targets TPUs: it imports torch_xla or builds a TPU Trainer. Computed
    once per rule instance, on first use (the imports are all bound by then only if they sit
    before the use, so the module is scanned as a whole)."""

    def __init__(self) -> None:
        self._value: bool | None = None

    def __call__(self, ctx: FileContext) -> bool:
        if self._value is None:
            self._value = _scan_tpu_file(ctx)
        return self._value


def _scan_tpu_file(ctx: FileContext) -> bool:
    if "torch_xla" in ctx.source:
        for node in walk(ctx.module):
            if isinstance(node, (cst.Import, cst.ImportFrom)):
                names = (
                    [module_name_of(node.module)]
                    if isinstance(node, cst.ImportFrom)
                    else [module_name_of(alias.name) for alias in node.names]
                )
                if any(name.split(".", 1)[0] == "torch_xla" for name in names):
                    return True
    source = ctx.source
    if not any(token in source for token in ("tpu", "TPU", "xla", "XLA")):
        return False
    from .matchers import is_trainer_call

    for node in walk(ctx.module):
        if isinstance(node, cst.Call) and is_trainer_call(ctx, node) and trainer_is_tpu(ctx, node):
            return True
    return False


# --- environment variables -----------------------------------------------------------------


@dataclass
class EnvAccess:
    """A write (or a mention) of an environment variable."""

    name: str
    key: cst.BaseExpression  # the node holding the name (a string literal)
    kind: str  # "assign", "setdefault", "putenv", "update", "dict", "read"
    value: cst.BaseExpression | None
    statement_node: cst.CSTNode  # the Assign / Call node


def _is_environ(ctx: FileContext, node: cst.BaseExpression) -> bool:
    return ctx.qualify(node) == "os.environ"


def env_accesses(ctx: FileContext, node: cst.CSTNode) -> Iterator[EnvAccess]:
    """Environment accesses that `node` (an Assign or a Call) makes."""
    if isinstance(node, cst.Assign):
        for target in node.targets:
            sub = target.target
            if (
                isinstance(sub, cst.Subscript)
                and _is_environ(ctx, sub.value)
                and len(sub.slice) == 1
            ):
                index = sub.slice[0].slice
                if isinstance(index, cst.Index):
                    name = string_value(index.value)
                    if name is not None:
                        yield EnvAccess(name, index.value, "assign", node.value, node)
        return
    if not isinstance(node, cst.Call):
        return
    func = node.func
    qualified = ctx.qualify(func)
    positional = [a for a in node.args if a.keyword is None and not a.star]
    if qualified in ("os.putenv", "os.environ.setdefault") and positional:
        name = string_value(positional[0].value)
        if name is not None:
            kind = "putenv" if qualified == "os.putenv" else "setdefault"
            value = positional[1].value if len(positional) > 1 else None
            yield EnvAccess(name, positional[0].value, kind, value, node)
    elif qualified == "os.environ.update":
        for arg in node.args:
            if arg.keyword is not None:
                yield EnvAccess(arg.keyword.value, arg.keyword, "update", arg.value, node)
            elif isinstance(arg.value, cst.Dict):
                for element in arg.value.elements:
                    if isinstance(element, cst.DictElement):
                        name = string_value(element.key)
                        if name is not None:
                            yield EnvAccess(name, element.key, "update", element.value, node)
    elif qualified in ("os.getenv", "os.environ.get", "os.environ.pop") and positional:
        name = string_value(positional[0].value)
        if name is not None:
            yield EnvAccess(name, positional[0].value, "read", None, node)


# --- imports that fixes move, add or drop ----------------------------------------------------


@dataclass
class ImportBinding:
    """An import statement that binds `local` (to `target`)."""

    local: str
    target: str
    line: cst.SimpleStatementLine
    small: cst.Import | cst.ImportFrom
    alias: cst.ImportAlias
    block: cst.Module | cst.IndentedBlock
    scope: cst.Module | cst.FunctionDef  # where the binding is visible

    @property
    def top_level(self) -> bool:
        return isinstance(self.block, cst.Module)


def _alias_binding(
    small: cst.Import | cst.ImportFrom, alias: cst.ImportAlias
) -> tuple[str, str] | None:
    """(local name, qualified target) bound by one alias of an absolute import."""
    name = module_name_of(alias.name)
    local = (
        alias.asname.name.value
        if (alias.asname is not None and isinstance(alias.asname.name, cst.Name))
        else None
    )
    if isinstance(small, cst.Import):
        if local is None:
            root = name.split(".", 1)[0]
            return root, root
        return local, name
    if small.relative:
        return None
    base = module_name_of(small.module)
    return (local or name), f"{base}.{name}"


def import_bindings(ctx: FileContext) -> list[ImportBinding]:
    """Every absolute import in the module (at any depth), with its block and scope."""
    from tpulint.analysis.walker import iter_children

    out: list[ImportBinding] = []
    # (node, its parent, the scope it belongs to, whether it is directly in a class body)
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None, cst.Module | cst.FunctionDef, bool]] = [
        (ctx.module, None, ctx.module, False)
    ]
    while stack:
        node, parent, scope, class_level = stack.pop()
        if isinstance(node, cst.SimpleStatementLine):
            if isinstance(parent, (cst.Module, cst.IndentedBlock)) and not class_level:
                for small in node.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(
                        small.names, cst.ImportStar
                    ):
                        for alias in small.names:
                            bound = _alias_binding(small, alias)
                            if bound is not None:
                                out.append(
                                    ImportBinding(
                                        bound[0], bound[1], node, small, alias, parent, scope
                                    )
                                )
            continue
        if isinstance(node, cst.FunctionDef):
            scope = node
            class_level = False
        elif isinstance(node, cst.ClassDef):
            class_level = True  # imports in a class body bind class attributes
        children = [c for c in iter_children(node) if not isinstance(c, cst.BaseExpression)]
        stack.extend((child, node, scope, class_level) for child in reversed(children))
    return out


def enclosing_scope(ctx: FileContext, node: cst.CSTNode) -> cst.Module | cst.FunctionDef:
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.FunctionDef):
            return ancestor
    return ctx.module


def binding_for(
    ctx: FileContext, bindings: Sequence[ImportBinding], local: str, node: cst.CSTNode
) -> ImportBinding | None:
    """The import that binds `local` where `node` uses it: the innermost enclosing function's
    import first, then a module-level one (at any block depth outside functions)."""
    scopes = [a for a in ctx.ancestors(node) if isinstance(a, cst.FunctionDef)] + [ctx.module]
    for scope in scopes:
        for binding in bindings:
            if binding.local == local and binding.scope is scope:
                return binding
    return None


def names_used(root: cst.CSTNode, skip: Sequence[cst.CSTNode] = ()) -> list[cst.Name]:
    """Every Name node under `root` outside import statements and outside `skip`."""
    skipped = {id(n) for n in skip}
    out: list[cst.Name] = []
    stack = [root]
    from tpulint.analysis.walker import iter_children

    while stack:
        node = stack.pop()
        if id(node) in skipped or isinstance(node, (cst.Import, cst.ImportFrom)):
            continue
        if isinstance(node, cst.Name):
            out.append(node)
        stack.extend(reversed(list(iter_children(node))))
    return out


def bound_near(
    binding: ImportBinding, local: str, target: str, bindings: Sequence[ImportBinding]
) -> bool:
    """Whether `local` is already bound to `target` in the block of `binding` or at the top
    level of the module."""
    for other in bindings:
        if (
            other.local == local
            and other.target == target
            and (other.block is binding.block or other.top_level)
        ):
            return True
    return False


def import_line(text: str) -> cst.SimpleStatementLine:
    """A new import statement line (`text`), with no leading blank lines or comments."""
    statement = cst.parse_statement(text + "\n")
    assert isinstance(statement, cst.SimpleStatementLine)
    return statement


def without_alias(binding: ImportBinding) -> cst.SimpleStatementLine | cst.RemovalSentinel:
    """The import line of `binding` with its alias removed (the whole line if it was the
    only name), keeping the layout of the remaining names."""
    new_small: list[cst.BaseSmallStatement] = []
    for small in binding.line.body:
        if small is binding.small:
            names = list(small.names)  # type: ignore[union-attr]
            index = next(i for i, a in enumerate(names) if a is binding.alias)
            del names[index]
            if not names:
                continue
            if index == len(names):  # the removed name was the last: its comma moves up
                names[-1] = names[-1].with_changes(comma=binding.alias.comma)
            small = small.with_changes(names=names)
        new_small.append(small)
    if not new_small:
        return cst.RemovalSentinel.REMOVE
    new_small[-1] = new_small[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return binding.line.with_changes(body=new_small)


# --- renaming references with their imports --------------------------------------------------


@dataclass(eq=False)
class Rename:
    """A reference (`xm.get_ordinal`, `TPUSpawnStrategy`) to rewrite into `new`.

    `local` is the imported name the old expression starts with; `needs` is the import the new
    expression needs (None when it reuses a name that is already there); `drop_old` asks for
    the import of `local` to be removed once nothing uses it any more. `fixable=False`
    reports without a fix.
    """

    report_node: cst.CSTNode
    old: cst.BaseExpression
    new: cst.BaseExpression
    local: str
    needs: ImportSpec | None
    message: str
    applicability: Applicability
    fix_message: str
    fixable: bool = True
    drop_old: bool = True


def spec_target(spec: ImportSpec) -> str:
    """What the import of `spec` binds its local name to."""
    if spec.name is not None:
        return f"{spec.module}.{spec.name}"
    if spec.alias is None:
        return spec.module.split(".", 1)[0]
    return spec.module


def spec_code(spec: ImportSpec) -> str:
    if spec.name is None:
        return f"import {spec.module}" + (f" as {spec.alias}" if spec.alias else "")
    return f"from {spec.module} import {spec.name}" + (f" as {spec.alias}" if spec.alias else "")


def plan_renames(ctx: FileContext, rule: object, renames: Sequence[Rename]) -> None:
    """Report every rename with a fix that keeps the imports right.

    - The old name imported at the top level: the engine adds the new import after the
      leading imports and drops the old one when nothing uses it any more.
    - The old name imported in a block (`if _XLA_AVAILABLE:`, `try:`, a function body): the
      new import goes right after it, in the same block, so conditional imports stay
      conditional; the last reference of the block's scope drops the old import when every
      other reference is rewritten in the same run.
    """
    bindings = import_bindings(ctx)
    by_binding: dict[int, list[tuple[Rename, ImportBinding]]] = {}
    resolved: dict[int, ImportBinding | None] = {}
    for rename in renames:
        binding = binding_for(ctx, bindings, rename.local, rename.old) if rename.fixable else None
        resolved[id(rename)] = binding
        if binding is not None:
            by_binding.setdefault(id(binding.line), []).append((rename, binding))
    suppressed_lines = _suppressed_lines(ctx)
    for rename in renames:
        binding = resolved[id(rename)]
        if binding is None:
            rule.report(rename.report_node, rename.message)  # type: ignore[attr-defined]
            continue
        needs = rename.needs
        if needs is not None and _name_taken(bindings, needs):
            rule.report(rename.report_node, rename.message)  # type: ignore[attr-defined]
            continue
        replacements: list[tuple[cst.CSTNode, object]] = [(rename.old, rename.new)]
        if binding.top_level and isinstance(binding.small, cst.ImportFrom):
            # The engine adds the import after the leading imports and drops the old name
            # once the fixed module no longer uses it.
            rule.report(  # type: ignore[attr-defined]
                rename.report_node,
                rename.message,
                fix=FixSpec(
                    rename.applicability,
                    rename.fix_message,
                    replacements,  # type: ignore[arg-type]
                    add_imports=(needs,) if needs is not None else (),
                    remove_unused_imports=(rename.local,) if rename.drop_old else (),
                ),
            )
            continue
        group = by_binding[id(binding.line)]
        add = needs is not None and not bound_near(
            binding, needs.local_name, spec_target(needs), bindings
        )
        drop = rename.drop_old and _is_last_use(ctx, rename, binding, group, suppressed_lines)
        if add or drop:
            new_lines: list[cst.BaseStatement] = []
            if drop:
                kept = without_alias(binding)
                if isinstance(kept, cst.SimpleStatementLine):
                    new_lines.append(kept)
            else:
                new_lines.append(binding.line)
            if add:
                assert needs is not None
                new_import = import_line(spec_code(needs))
                if not new_lines:
                    new_import = new_import.with_changes(leading_lines=binding.line.leading_lines)
                new_lines.append(new_import)
            if new_lines:
                replacement: object = (
                    new_lines[0] if len(new_lines) == 1 else cst.FlattenSentinel(new_lines)
                )
            elif len(binding.block.body) == 1:
                replacement = cst.SimpleStatementLine([cst.Pass()])
            else:
                replacement = cst.RemovalSentinel.REMOVE
            replacements.append((binding.line, replacement))
        rule.report(  # type: ignore[attr-defined]
            rename.report_node,
            rename.message,
            fix=FixSpec(rename.applicability, rename.fix_message, replacements),  # type: ignore[arg-type]
        )


def _name_taken(bindings: Sequence[ImportBinding], needs: ImportSpec) -> bool:
    """`xr` (say) is imported as something else somewhere in the file."""
    return any(b.local == needs.local_name and b.target != spec_target(needs) for b in bindings)


def _suppressed_lines(ctx: FileContext) -> frozenset[int]:
    return frozenset(
        number
        for number, text in enumerate(physical_lines(ctx.source), start=1)
        if "# noqa" in text or "tpulint: ignore" in text or "tpulint:ignore" in text
    )


def _is_last_use(
    ctx: FileContext,
    rename: Rename,
    binding: ImportBinding,
    group: Sequence[tuple[Rename, ImportBinding]],
    suppressed_lines: frozenset[int],
) -> bool:
    """Whether `rename` is the last of the references that, rewritten together, leave the
    import of `binding.local` unused in its scope."""
    roots = {id(_root_name(r.old)): r for r, _ in group if r.fixable and r.drop_old}
    uses = [n for n in names_used(binding.scope) if n.value == binding.local]
    if not uses or any(id(n) not in roots for n in uses):
        return False
    if suppressed_lines:
        from tpulint.analysis.positions import PositionIndex

        positions = PositionIndex(ctx.module, ctx.source)
        positions.resolve([r.report_node for r, _ in group])
        if any(positions.range(r.report_node)[0].line in suppressed_lines for r, _ in group):
            return False
    return roots.get(id(uses[-1])) is rename


def _root_name(node: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(node, (cst.Attribute, cst.Call)):
        node = node.value if isinstance(node, cst.Attribute) else node.func
    return node
