"""The one value inference: what an expression holds, on Python's `ast`, as value atoms.

The project model (tpulint.analysis.summary walks each file with it and keeps what functions
return and what attributes hold) and the rules (tpulint.analysis.value_query asks it about the
expression at a position of the libcst tree they run on) share this evaluator and the tables
of tpulint.analysis.value_tables, so a precision fix lands in both.

Value atoms (JSON-friendly, so summaries cache as they are):
    "device" "cpu" "mask" "module" "numpy" "number" "host" "unknown" "none"   concrete kinds
    "cpu_device"                   a device object (or name) that is the CPU on a TPU host:
                                   `torch.device("cpu")`, or a CUDA/MPS chain such as
                                   `"cuda" if torch.cuda.is_available() else "cpu"`; host data
                                   itself, and what `.to(d)` / `device=d` put on the CPU
    ["p", i]                       the function's parameter i
    ["c", form, target, [args]]    the result of a call (args: atoms of positional args)
    ["c", form, target, [args], [[name, [atoms]], ...]]
                                   the same with what its keywords pass ("**" for a spread)
    ["a", name]                    the value of `self.<name>`
    ["ha", name, holder]           a row of `name` of the object `self.<holder>` holds
                                   (`for t in self.scheduler.timesteps`): a CPU tensor when
                                   that object's project classes set `self.<name>` to a CPU
                                   tensor (ProjectModel.held_attribute), else unknown
    ["t", [atoms], ...]            a tuple of values (element by element)
    ["s", [atoms]]                 a container (list, dict, set) holding values of these atoms
    ["s", [atoms], [keys]]         a dict literal or comprehension: its values and its keys
                                   (iterating it gives the keys)
    ["s", [atoms], [keys], [[key, [atoms]], ...]]
                                   a returned dict whose string keys are known, with what
                                   each holds (`out["mse"] = ...; return out`)
    ["e", i, [atoms]]              element i (-1: any) of a tuple or container value
    ["e", -1, [atoms], key]        entry `key` (a string) of a dict value: what a returned
                                   dict holds there when its entries are known, else any
                                   of its values
    ["k", key, [atoms], [fallback]]
                                   entry `key` (a string) of a parameter's value (the step's
                                   batch dict): a Python value when every collate function
                                   of the project that builds that key builds one (a batch
                                   `size` from `len(samples)`), else `fallback`. A key
                                   "@attr" is `batch[self.attr]`: unknown when the keyed
                                   pipeline's modules write no device tensor there
                                   (ProjectModel.keyed_entry_kind), else `fallback`
    ["g", name, [atoms], [fallback]]
                                   attribute `name` of a parameter's value: host data when
                                   every project class that sets it is a record Lightning's
                                   batch transfer does not move (no `.to`), else `fallback`
    ["g", name, [atoms], [fallback], [calls]]
                                   the same of a parameter annotated with a project class
                                   (`calls`: its constructor call): a Python number when the
                                   class's attribute or property `name` is one
    ["mv", kind, [atoms]]          the atoms moved to `kind` ("cpu"/"device"), unless they
                                   resolve to a module (`make_model().to(device)`)
    ["w", [atoms]]                 a tensor made or moved with `device=t.device` for `t` of
                                   these atoms: on the CPU when `t` is a CPU tensor, else on
                                   the device
    ["md", [place], [on_cpu], [otherwise]]
                                   a move to (or a factory on) the device `place` holds:
                                   `on_cpu` when it resolves to the CPU on a TPU host
                                   ("cpu_device": `.to(get_device())` with a CUDA chain),
                                   else `otherwise`
    ["m", atom, ...]               a boolean mask when the atoms are tensors
                                   (`x > 0` on a parameter `x`)
    ["v", atom, ...]               a tensor computed by torch from these operands: where they
                                   are, unknown when they turn out not to be tensors
    ["x", atom, ...]               an elementwise result (`a * b`) of a CPU tensor and symbolic
                                   operands, or of several symbolic operands: on the device
                                   if one of them is, else on the CPU if one of them is a CPU
                                   tensor, else any of them
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field
from typing import Any

from tpulint.analysis.python_ast import self_attribute_name
from tpulint.analysis.value_tables import (
    CHOOSING_BUILTINS,
    CONTAINER_METHODS,
    COPY_FUNCTIONS,
    ELEMENTWISE_BUILTINS,
    EXTERNAL_HOST_METHOD_NAMES,
    HOST_ATTRIBUTES,
    HOST_BUILTINS,
    HOST_CLASS_NAMES,
    HOST_METHODS,
    LIKE_FACTORIES,
    MASK_METHODS,
    MODULE_SELF_METHODS,
    NUMBER_BUILTINS,
    NUMBER_CLASS_NAMES,
    NUMBER_METHODS,
    NUMPY_CLASS_NAMES,
    NUMPY_METHODS,
    OPTIMIZER_DEFAULT_OFF,
    OPTIMIZER_HOST_STATE_KEYS,
    SAME_TENSOR_ATTRIBUTES,
    SELF_HOST_ATTRIBUTES,
    SELF_HOST_METHODS,
    STRING_ARGUMENT_METHODS,
    STRING_FUNCTIONS,
    STRING_METHODS,
    STRING_RESULT_METHODS,
    TENSOR_METHODS_OF_MODULES,
    TORCH_CPU_SECOND_RESULTS,
    TORCH_CUDA_CHECK_PREFIXES,
    TORCH_FACTORIES,
    TORCH_HOST_FUNCTIONS,
    TORCH_HOST_PREFIXES,
    TORCH_MASK_FUNCTIONS,
    TYPE_NAME_METHODS,
    package_kind,
)

Atom = Any  # str | list (see the module docstring)

_BUILTIN_NAMES = frozenset(dir(builtins))

MAX_ATOMS = 8
# Atoms whose value is only known when resolved (a parameter, an attribute, a call, ...).
_SYMBOLIC = frozenset({"p", "a", "c", "e", "k", "g", "v", "x", "m", "mv", "md", "w", "ha"})
_HOSTLIKE = ("number", "host", "numpy", "module", "none", "cpu_device")
# torch factories that take a tensor input and draw where it is (`torch.bernoulli(probs)`;
# `torch.normal(0.0, 1.0, size=(n,))` of numbers is on the CPU).
_INPUT_PLACED_FACTORIES = frozenset({"bernoulli", "normal", "poisson"})
# Tensor methods whose result (with a `dim`) is a named tuple of `values` and `indices`.
_NAMED_TUPLE_REDUCTIONS = frozenset(
    {"min", "max", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin"}
)
# einops functions whose result is an array of their input array's library, where it is
# (`rearrange(x, "b n d -> b d n")`, `reduce(x, "b n -> b", "max")`, `repeat`, `einsum`).
_EINOPS_ARRAY_FUNCTIONS = frozenset({"rearrange", "reduce", "repeat", "einsum"})
# An element of an optimizer's `param_groups` (what iterating `self.param_groups` yields).
_PARAM_GROUP: Atom = ["e", -1, [["a", "param_groups"]]]


@dataclass
class Scope:
    """The state of one body being walked: its function's summary (None at module or class
    level), the visible imports, what each local name holds, the constructor of each local
    that is an instance of a project class, and the class whose method this is."""

    info: Any
    imports: dict[str, str]  # visible import bindings (module ones, then local)
    env: dict[str, list[Atom]] = field(default_factory=dict)  # local name -> value atoms
    instances: dict[str, str] = field(default_factory=dict)  # local name -> constructor target
    # The conditions the current code runs under (ast expressions, or guard kinds), turned
    # into guard kinds only where a call is recorded.
    guards: tuple[Any, ...] = ()
    # Whether the current statement precedes a `raise` in its block (an error path).
    error_path: bool = False
    cls: Any = None  # the ClassSummary whose method this is (through nesting)
    # Whether calls are recorded: not in hooks that never run per step (`__init__`, `setup`,
    # `on_*_epoch_end`), which no hot chain enters.
    record_calls: bool = True
    # Per enclosing `if` branch: name -> its value before the branch (`_MISSING` if unbound).
    journals: list[dict[str, Any]] = field(default_factory=list)
    # Locals some of whose string keys are bound (`state["step"] = ...`): their entries live
    # in `env` as `state['step']` and go when the local is bound again.
    keyed: set[str] = field(default_factory=set)
    # Locals bound to methods of `self` or of its attributes (`step = self.model.forward_old
    # if old else self.model.forward`): the call sites a call of the local stands for.
    method_refs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    # Locals bound to an attribute of `self` (`orch = self.loss_orchestrator`, or a method of
    # the class that returns one, `orch = self._require_orchestrator()`): a call of a method of
    # the local (`orch.compute_loss(...)`) is one of the attribute's (`self.<attr>.<m>(...)`).
    attr_aliases: dict[str, str] = field(default_factory=dict)
    # Whether the current code runs only where CUDA or MPS exists (the body of `if
    # torch.cuda.is_available():`): what it returns or binds is no value on a TPU host.
    cuda_only: bool = False
    # Parameters annotated with a plain class name (`decoder: Decoder`): what an attribute
    # set from one holds when the calls that pass it are not visible (built from a config).
    param_classes: dict[str, ast.expr] = field(default_factory=dict)
    # Locals bound to classes (`cls = CTMCField` in one branch, `cls = Field` in another):
    # the qualified classes a call of the local builds.
    class_refs: dict[str, list[str]] = field(default_factory=dict)
    # What each parameter of the function held on entry: a parameter whose value is still
    # that (or may be) has not been replaced by the code before.
    params: dict[str, list[Atom]] = field(default_factory=dict)
    # Parameters annotated as mappings with string keys (`targets: Dict[str, Tensor]`):
    # iterating one, while it still holds what the call passed, yields strings.
    str_keyed: frozenset[str] = frozenset()
    # The function's `**kwargs` parameter: its name, what it was bound to on entry, and the
    # parameter atom that stands for the values the calls pass by keyword beyond the named
    # parameters (`logger.update(lr=lr, loss=v)`): what iterating its `.items()` yields.
    kwargs: tuple[str, list[Atom], Atom] | None = None


def dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def is_super_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


class ValueEvaluator:
    """The expression evaluator (a mixin of the summarizer, which provides `module_names`
    and `qualify`)."""

    module_names: set[str]
    star_import: bool = False

    def qualify(self, text: str, imports: dict[str, str]) -> str:
        """The qualified name of a dotted name through the visible imports, or `.name` for
        a name of this module."""
        root, _, rest = text.partition(".")
        target = imports.get(root)
        if target is None:
            return "." + text
        return f"{target}.{rest}" if rest else target

    # --- bindings --------------------------------------------------------------------------

    def bind(self, target: ast.expr, value: list[Atom], scope: Scope) -> None:
        if isinstance(target, ast.Name):
            if value == ["none"]:
                # `x = None` in a branch: x keeps what it may otherwise hold.
                if target.id not in scope.env:
                    set_local(scope, target.id, ["unknown"])
                return
            set_local(scope, target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            elements = tuple_elements(value, len(target.elts))
            if (
                elements is not None
                and _step_batch(value, scope)
                and not any(isinstance(e, ast.Starred) for e in target.elts)
            ):
                # `x, lengths, names = batch` in a step: what the project's collate
                # functions return at that position of a tuple of that length
                count = len(target.elts)
                elements = [
                    [["k", f"#{i}/{count}", value, element]] for i, element in enumerate(elements)
                ]
            for index, element in enumerate(target.elts):
                if isinstance(element, ast.Starred):
                    self.bind(element.value, ["host"], scope)
                else:
                    self.bind(element, elements[index] if elements else ["unknown"], scope)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, ["host"], scope)
        else:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                # `d[k] = v` / `xs[i] = v` on a local container: it holds `v` too
                store_in_container(scope, target.value.id, value, self.atoms(target.slice, scope))
            key = entry_key(target)
            if key is not None and key[0] in scope.env:
                # `state["step"] = torch.tensor(0.0)`: what the local dict holds at that key
                set_local(scope, key[1], value)
                scope.keyed.add(key[0])

    def bind_loop(self, target: ast.expr, iterator: ast.expr, scope: Scope) -> None:
        self.bind(target, self.element_atoms(iterator, target, scope), scope)

    def element_atoms(self, iterator: ast.expr, target: ast.expr, scope: Scope) -> list[Atom]:
        """What iterating over `iterator` yields."""
        if isinstance(iterator, ast.Attribute) and iterator.attr == "param_groups":
            # `for group in optimizer.param_groups`: a parameter group (a dict of settings)
            return [_PARAM_GROUP]
        if (
            isinstance(iterator, ast.Subscript)
            and isinstance(iterator.slice, ast.Constant)
            and iterator.slice.value == "params"
            and _PARAM_GROUP in self.atoms(iterator.value, scope)
        ):
            # `for p in group["params"]`: the model's parameters, where the model is (an
            # optimizer's `step` updates them on the device)
            return ["device"]
        if (
            isinstance(iterator, ast.Call)
            and isinstance(iterator.func, ast.Attribute)
            and iterator.func.attr in ("parameters", "named_parameters")
            and (
                (isinstance(iterator.func.value, ast.Name) and iterator.func.value.id == "self")
                or self.atoms(iterator.func.value, scope) == ["module"]
            )
        ):
            # `for p in self.parameters()`: the module's weights, where the module is (on
            # the device in a step), and `(name, weight)` pairs of `named_parameters()`
            if iterator.func.attr == "parameters":
                return ["device"]
            return [["t", ["host"], ["device"]]]
        if (
            isinstance(iterator, ast.Name)
            and iterator.id in scope.str_keyed
            and scope.env.get(iterator.id) is scope.params.get(iterator.id)
        ):
            # `for key in targets` over a parameter annotated `Dict[str, Tensor]`: its keys
            return ["host"]
        if (
            isinstance(iterator, ast.Call)
            and isinstance(iterator.func, ast.Attribute)
            and iterator.func.attr == "keys"
            and not iterator.args
        ):
            # `for key in outputs.keys()`: a mapping's keys (names, like those `.items()`
            # yields), not the tensors it holds
            keys = [
                k
                for a in self.atoms(iterator.func.value, scope)
                if isinstance(a, list) and a[0] == "s" and len(a) > 2
                for k in a[2]
            ]
            return keys or ["host"]
        if isinstance(iterator, ast.Call) and isinstance(iterator.func, ast.Name):
            name = iterator.func.id
            shadowed = name in scope.env or name in scope.imports
            if name == "range" and not shadowed:
                return ["number"]
            if name == "zip" and not shadowed and iterator.args:
                return [
                    ["t", *(self.element_atoms(a, ast.Name("_"), scope) for a in iterator.args)]
                ]
            if name == "enumerate" and not shadowed and iterator.args:
                inner = self.element_atoms(iterator.args[0], ast.Name("_"), scope)
                return [["t", ["number"], inner]]
        if (
            isinstance(iterator, ast.Call)
            and isinstance(iterator.func, ast.Attribute)
            and iterator.func.attr in ("items", "values")
            and not iterator.args
        ):
            base = self.atoms(iterator.func.value, scope)
            spread = scope.kwargs
            if (
                spread is not None
                and isinstance(iterator.func.value, ast.Name)
                and iterator.func.value.id == spread[0]
                and base is spread[1]
            ):
                # `for k, v in kwargs.items()` of the function's own `**kwargs`: the values
                # the calls pass by keyword (ProjectModel.param_value of that atom)
                passed: list[Atom] = [spread[2]]
                return passed if iterator.func.attr == "values" else [["t", ["host"], passed]]
            if base == ["host"]:
                # An opaque dict (`scores = dict()` filled at computed keys): its values are
                # whatever was stored, not host data because the dict is.
                values: list[Atom] = ["unknown"]
                return values if iterator.func.attr == "values" else [["t", ["host"], values]]
            if all_host(base):
                return ["host"]
            # `for name, value in batch.items()`: the values of a container of tensors
            if iterator.func.attr == "values":
                return container_elements(base)
            return [["t", ["host"], container_elements(base)]]
        if isinstance(iterator, (ast.List, ast.Tuple, ast.Set)):
            atoms: list[Atom] = []
            for element in iterator.elts:
                atoms = union(atoms, self.atoms(element, scope))
            return atoms or ["unknown"]
        base = self.atoms(iterator, scope)
        if (
            base == ["unknown"]
            and isinstance(iterator, ast.Attribute)
            and self_attribute_name(iterator.value) is not None
        ):
            # `for t in self.scheduler.timesteps`: rows of what the project's classes hold in
            # `timesteps` (a schedule made on the CPU stays there: ProjectModel.held_attribute)
            return [["ha", iterator.attr, self_attribute_name(iterator.value)]]
        rows = [
            a
            for a in base
            if is_tensorish(a) or (isinstance(a, list) and a[0] in ("mv", "md", "w"))
        ]
        if rows:
            # Rows of a tensor are tensors, where it is (rows of `tokens.cpu()` are on the CPU).
            return ["device" if a == "mask" else a for a in rows]
        if any(isinstance(a, list) and a[0] in ("s", "t") for a in base):
            return iterated_elements(base)
        if any(isinstance(a, list) and a[0] in _SYMBOLIC for a in base):
            return [["e", -1, base]]  # rows of a parameter: tensors if it is one
        if base == ["numpy"]:
            return ["numpy"]
        if all_host(base):
            return ["host"]
        return ["unknown"]

    def bind_comprehension(self, node: ast.expr, scope: Scope) -> Scope:
        """A scope in which the targets of a comprehension's generators are bound."""
        inner = Scope(scope.info, scope.imports, dict(scope.env), scope.instances, cls=scope.cls)
        inner.keyed = set(scope.keyed)
        inner.str_keyed, inner.params = scope.str_keyed, scope.params
        for generator in getattr(node, "generators", ()):
            self.bind_loop(generator.target, generator.iter, inner)
        return inner

    # --- narrowing -------------------------------------------------------------------------

    def narrowing(self, test: ast.expr, scope: Scope) -> tuple[dict[str, list[Atom]], dict]:
        """What an `if` test says about names in its body and in its `else`:
        `isinstance(x, torch.Tensor)` makes `x` a tensor in the body and no tensor in the
        `else`; `isinstance(x, (str, np.ndarray, pd.Series))` makes it host data in the body."""
        negated = False
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test = test.operand
            negated = not negated
        if (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Is, ast.IsNot))
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None
        ):
            # `if x is not None: x = x.to(torch.bool)`: where the test fails, `x` is None
            none = {test.left.id: ["none"]}
            if isinstance(test.ops[0], ast.IsNot):
                negated = not negated
            return ({}, none) if negated else (none, {})
        if not (
            isinstance(test, ast.Call)
            and isinstance(test.func, ast.Name)
            and test.func.id == "isinstance"
            and len(test.args) == 2
            and isinstance(test.args[0], ast.Name)
            and test.func.id not in scope.env
        ):
            return {}, {}
        name = test.args[0].id
        classes = test.args[1]
        options = classes.elts if isinstance(classes, ast.Tuple) else [classes]
        texts = [dotted(c) for c in options]
        if any(t is None for t in texts):
            return {}, {}
        qualified = [self.qualify(t, scope.imports) for t in texts if t is not None]
        tensor = [q for q in qualified if q.startswith("torch.") and q.endswith("Tensor")]
        lasts = [q.rsplit(".", 1)[-1] for q in qualified]
        current = scope.env.get(name, ["unknown"])
        holds: dict[str, list[Atom]] = {}
        fails: dict[str, list[Atom]] = {}
        if tensor and len(tensor) == len(qualified):
            if current and all(a in ("number", "host") for a in current):
                # `if isinstance(embed_dim, torch.Tensor):` of a size read from `.shape` (a
                # tensor only under JIT tracing): a Python value, whatever the body does
                return {}, {}
            holds[name] = ["cpu"] if current == ["cpu"] else ["device"]
            fails[name] = _not_a_tensor(current)
        elif not tensor and all(last in HOST_CLASS_NAMES for last in lasts):
            if all(last in NUMPY_CLASS_NAMES for last in lasts):
                holds[name] = ["numpy"]
            elif all(last in NUMBER_CLASS_NAMES for last in lasts):
                holds[name] = ["number"]
            else:
                holds[name] = ["host"]
        elif tensor:
            # a tensor or another class: not a tensor when it fails
            fails[name] = _not_a_tensor(current)
        return (fails, holds) if negated else (holds, fails)

    # --- expressions -----------------------------------------------------------------------

    def value(self, node: ast.expr, scope: Scope) -> list[Atom]:
        """The atoms of a returned value (a tuple is one `["t", ...]` atom)."""
        return self.atoms(node, scope)

    def atoms(self, node: ast.expr, scope: Scope, depth: int = 0) -> list[Atom]:
        if depth > 30:
            return ["unknown"]
        d = depth + 1
        if isinstance(node, ast.Constant):
            if node.value is None:
                return ["none"]
            if isinstance(node.value, (bool, int, float, complex)):
                return ["number"]
            return ["host"]
        if isinstance(node, (ast.JoinedStr, ast.Lambda, ast.FormattedValue)):
            return ["host"]
        if isinstance(node, ast.Tuple):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                return [["s", self._elements(node.elts, scope, d)]]
            return [["t", *(self.atoms(e, scope, d) for e in node.elts)]]
        if isinstance(node, (ast.List, ast.Set)):
            return [["s", self._elements(node.elts, scope, d)]]
        if isinstance(node, ast.Dict):
            values = [v for v in node.values if v is not None]
            keys = [k for k in node.keys if k is not None]
            return [["s", self._elements(values, scope, d), self._elements(keys, scope, d)]]
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            inner = self.bind_comprehension(node, scope)
            return [["s", self.atoms(node.elt, inner, d)]]
        if isinstance(node, ast.DictComp):
            inner = self.bind_comprehension(node, scope)
            keys = [a for a in self.atoms(node.key, inner, d) if a != "none"]
            return [["s", self.atoms(node.value, inner, d), keys]]
        if isinstance(node, ast.Name):
            if node.id in ("True", "False"):
                return ["number"]
            bound = scope.env.get(node.id)
            if bound is not None:
                return bound
            imported = scope.imports.get(node.id)
            if imported is not None:
                known = package_kind(imported.split(".", 1)[0])
                if known is None and self.imported_cpu_constant(node.id):
                    return ["cpu"]
                return [known or "unknown"]
            held = self.global_atoms(node.id, scope)
            if held is not None:
                return held
            return ["unknown"]
        if isinstance(node, ast.Attribute):
            return self.attribute(node, scope, d)
        if isinstance(node, ast.Call):
            return self.call(node, scope, d)
        if isinstance(node, ast.Subscript):
            if _optimizer_host_state(node, scope, self.atoms):
                return ["cpu"]  # `state["step"]` of a torch optimizer: a CPU tensor
            key = entry_key(node)
            if key is not None and key[1] in scope.env:
                return scope.env[key[1]]  # `state["step"]` bound in this function
            base = self.atoms(node.value, scope, d) or ["unknown"]
            if all(isinstance(a, str) for a in base):
                if "module" in base:
                    return ["host"] if base == ["module"] else ["unknown"]
                # indexing a tensor gives a tensor, a number stays a number
                return ["device" if a == "mask" else a for a in base]
            index = node.slice
            if (
                isinstance(index, ast.Constant)
                and isinstance(index.value, str)
                and from_params(base)
            ):
                # `sample["size"]`: what the collate functions build at that key
                return [["k", index.value, base, [["e", -1, base]]]]
            if (
                isinstance(index, ast.Attribute)
                and isinstance(index.value, ast.Name)
                and index.value.id == "self"
                and from_params(base)
            ):
                # `batch[self.key_in]`: the entry at the key the module was built with, what
                # the keyed pipeline's modules write there (ProjectModel.keyed_entry_kind)
                return [["k", "@" + index.attr, base, [["e", -1, base]]]]
            position = (
                index.value if isinstance(index, ast.Constant) and type(index.value) is int else -1
            )
            if position >= 0 and _step_batch(base, scope):
                # `batch[1]` in a step: what the collate functions return at that position
                return [["k", f"#{position}", base, [["e", position, base]]]]
            if isinstance(index, ast.Constant) and isinstance(index.value, str):
                # `scores["mse"]`: the entry at that key when the dict's entries are known
                # (`dict_entries`), else any of its values
                return [["e", -1, base, index.value]]
            return [["e", position, base]]  # element `position` (-1: any) of a tuple
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Add) and (_is_text(node.left) or _is_text(node.right)):
                # `", " + message`: string concatenation gives a string (a tensor operand
                # would raise), no tensor is read. (`"%.3f" % t` does read `t`.)
                return ["host"]
            # `t / torch.sqrt(torch.tensor(3))`: a 0-dim CPU tensor built from a number, which
            # torch combines with a tensor on any device as it does the number
            left = ["number"] if _scalar_tensor(node.left) else self.atoms(node.left, scope, d)
            right = ["number"] if _scalar_tensor(node.right) else self.atoms(node.right, scope, d)
            if isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)) and (
                maskish(left) or maskish(right)
            ):
                if "cpu" in (*left, *right) and not any(
                    a in ("device", "mask") for a in (*left, *right)
                ):
                    return ["cpu"]
                return ["mask"] if "mask" in left or "mask" in right else as_mask(left, right)
            if isinstance(node.op, ast.Mult) and maskish(left) and maskish(right):
                # (t != 255) * (t < C): a product of masks is a mask
                return ["mask"] if "mask" in left and "mask" in right else as_mask(left, right)
            return arith(left, right)
        if isinstance(node, ast.UnaryOp):
            inner = self.atoms(node.operand, scope, d)
            if isinstance(node.op, ast.Not):
                return ["number"] if all_host(inner) else ["unknown"]
            if isinstance(node.op, ast.Invert):
                if "cpu" in inner and not any(a in ("device", "mask") for a in inner):
                    return ["cpu"]
                if any(is_tensorish(a) for a in inner):
                    return ["mask"]
                if any(
                    isinstance(a, list) and a[0] in ("p", "m", "a", "c", "e", "k", "g")
                    for a in inner
                ):
                    return [["m", *(a for a in inner if isinstance(a, list) or a == "unknown")]]
            return inner
        if isinstance(node, ast.Compare):
            return self.compare(node, scope, d)
        if isinstance(node, ast.BoolOp):
            out: list[Atom] = []
            for value in node.values:
                out = union(out, self.atoms(value, scope, d))
            return [a for a in out if a != "none"] or ["none"]
        if isinstance(node, ast.IfExp):
            if capturable_flag(node.test):
                # `zeros((), device=p.device) if group["capturable"] else tensor(0.0)`: the
                # optimizer flags torch leaves off by default pick the `else`.
                return self.atoms(node.orelse, scope, d)
            if self.cuda_check(node.test, scope):
                # `"cuda" if torch.cuda.is_available() else "cpu"`: on a TPU host the test is
                # False, only the `else` runs (a device chain picks the CPU there).
                return self.device_atoms(node.orelse, scope, d)
            body, orelse = self.atoms(node.body, scope, d), self.atoms(node.orelse, scope, d)
            on_cpu = cpu_branch(node)
            if on_cpu is not None:
                # `get_device() if x.device != torch.device("cpu") else x.device`: the branch
                # taken where `x.device` is the CPU gives that device
                if on_cpu is node.body:
                    body = ["cpu_device"]
                else:
                    orelse = ["cpu_device"]
            out = union([a for a in body if a != "none"], [a for a in orelse if a != "none"])
            return out or ["none"]
        if isinstance(node, ast.NamedExpr):
            value = self.atoms(node.value, scope, d)
            self.bind(node.target, value, scope)
            return value
        if isinstance(node, ast.Starred):
            return self.atoms(node.value, scope, d)
        return ["unknown"]

    def _elements(self, nodes: list[ast.expr], scope: Scope, d: int) -> list[Atom]:
        out: list[Atom] = []
        for node in nodes:
            atoms = self.atoms(node, scope, d)
            if isinstance(node, ast.Starred):
                atoms = container_elements(atoms)
            out = union(out, [a for a in atoms if a != "none"])
        return out

    def compare(self, node: ast.Compare, scope: Scope, d: int) -> list[Atom]:
        if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
            return ["number"]
        operands = [node.left, *node.comparators]
        if any(_string_or_none(o) for o in operands):
            # `batch["task"][0] == "asr"`: tensors are not compared to str; `t == None` is
            # Python's False (`Tensor.__eq__` returns NotImplemented for None), no read;
            # `x != ["NA"]`: a list of strings is no tensor operand either (torch raises)
            return ["number"]
        if any(isinstance(o, (ast.List, ast.Tuple, ast.Dict, ast.Set)) for o in operands):
            # `feats != []`, `x == ()`: a tensor compared with a list/tuple/dict/set display
            # is Python's comparison (`Tensor.__eq__` gives NotImplemented), a plain bool
            return ["number"]
        kinds = [self.atoms(o, scope, d) for o in operands]
        flat = [a for k in kinds for a in k]
        if all(all_host(k) for k in kinds):
            return ["numpy"] if "numpy" in flat else ["number"]
        if any(is_string(o) for o in operands):
            # `pred.strip() == gt`: Python's comparison of a string (a tensor compared with a
            # str is False, not elementwise), no read of a tensor
            return ["number"]
        if any(a in ("device", "mask") for a in flat):
            return ["mask"]
        return mask_of(kinds)

    def attribute(self, node: ast.Attribute, scope: Scope, d: int) -> list[Atom]:
        attr = node.attr
        base_node = node.value
        if len(attr) > 4 and attr.startswith("__") and attr.endswith("__"):
            # Python's object machinery or a library's bookkeeping (`batch.__slices__`, a
            # record's list of offsets; `x.__dict__`, `x.__class__`): never tensor data.
            return ["host"]
        if isinstance(base_node, ast.Name) and base_node.id == "self":
            if attr in SELF_HOST_ATTRIBUTES:
                return ["host"]
            return [["a", attr]]
        text = dotted(node)
        if text is not None:
            root = text.split(".", 1)[0]
            if root in scope.imports and root not in scope.env:
                qualified = scope.imports[root]
                kind = package_kind(qualified.split(".", 1)[0])
                if kind is not None:
                    return [kind]
                if qualified.split(".", 1)[0] == "torch":
                    return ["host"]  # torch.float32, torch.nn: not tensors
                return ["unknown"]
        if attr in HOST_ATTRIBUTES:
            return ["host"]
        base = self.atoms(base_node, scope, d)
        if attr in SAME_TENSOR_ATTRIBUTES:
            return base
        if (
            attr in ("values", "indices")
            and isinstance(base_node, ast.Call)
            and isinstance(base_node.func, ast.Attribute)
            and base_node.func.attr in _NAMED_TUPLE_REDUCTIONS
        ):
            # `d.min(dim=1).values`: a field of torch's (values, indices) result, where `d` is
            return ["device" if a == "mask" else a for a in base]
        if base == ["numpy"]:
            return ["numpy"]
        if all_host(base):
            return ["host"]
        if base and all(a in ("device", "mask") for a in base):
            # An attribute of the step's data (`batch.images`, `target.lengths`): step data.
            return ["device"]
        if base == ["cpu"]:
            # `order.indices` of `scores.sort()` on the CPU: what torch computed there
            return ["cpu"]
        if any(isinstance(a, list) and a[0] == "p" for a in base):
            otherwise: list[Atom] = [["e", -1, base]]  # step data if the parameter is
        else:
            otherwise = ["unknown"]
        if from_params(base):
            # `data.target_full` of `data, target = batch`: host data if `data` is a record
            # the batch transfer leaves on the host
            annotated = (
                scope.param_classes.get(base_node.id)
                if isinstance(base_node, ast.Name)
                and scope.env.get(base_node.id) == scope.params.get(base_node.id)
                else None
            )
            if annotated is not None:
                # `frame.num_detected` of `frame: Frame`: the annotated project class's
                # attribute or property when that is a Python number (`len(self.items)`,
                # `-> int`), whatever the callers' data is (ProjectModel.class_number)
                built = ast.copy_location(ast.Call(func=annotated, args=[], keywords=[]), node)
                made = [a for a in self.atoms(built, scope, d) if isinstance(a, list)]
                if made and all(a[0] == "c" for a in made):
                    return [["g", attr, base, otherwise, made]]
            return [["g", attr, base, otherwise]]
        if base and all(isinstance(a, list) and a[0] == "c" for a in base):
            # `out.loss` of `out = self.model(batch)`: the field of the record the callee
            # returns (`record_fields`), unknown when it returns none
            return [["e", -1, base, "." + attr]]
        return otherwise

    def call(self, node: ast.Call, scope: Scope, d: int) -> list[Atom]:
        func = node.func
        positional = [a for a in node.args if not isinstance(a, ast.Starred)]

        def args() -> list[list[Atom]]:
            return [self.atoms(a, scope, d) for a in positional]

        if isinstance(func, ast.Name):
            name = func.id
            if name == "self" and scope.cls is not None:
                return ["device"]  # `self(x)`: the module's forward
            if name in scope.instances:
                return [
                    self.call_atom(
                        ["c", "inst", f"{scope.instances[name]}.__call__", args()], node, scope, d
                    )
                ]
            if name in scope.class_refs:
                built: list[Atom] = []
                for target in scope.class_refs[name]:
                    built = union(
                        built, [self.call_atom(["c", "name", target, args()], node, scope, d)]
                    )
                return built
            if name in scope.env:
                bound = scope.env[name]
                # calling a host callable (an MLX/numpy function bound locally)
                if all_host(bound):
                    return ["host"]
                given = [a for arg in args() for a in arg]
                if "cpu" in given and all(a == "cpu" or a in _HOSTLIKE for a in given):
                    return ["cpu"]  # a callable of CPU tensors: its result stays with them
                return ["unknown"]
            if name in scope.imports:
                return self.qualified_call(scope.imports[name], node, scope, d, args)
            if name == "self":
                return ["device"]
            if name in NUMBER_BUILTINS:
                return ["number"]
            if name in ELEMENTWISE_BUILTINS and positional:
                inner = self.atoms(positional[0], scope, d)
                return (
                    ["device" if a == "mask" else a for a in inner]
                    if not all_host(inner)
                    else ["number"]
                )
            if name in ("list", "tuple") and len(positional) == 1 and not node.keywords:
                listed = _listed(self.atoms(positional[0], scope, d))
                if listed is not None:
                    return listed
            if (
                name in _SUBSET_BUILTINS
                and len(positional) == _SUBSET_BUILTINS[name]
                and not node.keywords
                and name not in scope.imports
            ):
                # `filter(keep, params)`, `reversed(xs)`, `iter(xs)`: some of the iterable's
                # own elements, where they are (`reversed(sizes.cpu())`: rows of a CPU copy)
                rows = self.atoms(positional[-1], scope, d)
                if rows and all(
                    is_tensorish(a)
                    or (
                        isinstance(a, list)
                        and (a[0] in ("v", "w", "x", "s", "mv", "md") or a[0] in _ITERABLE_SYMBOLS)
                    )
                    for a in rows
                ):
                    return rows
            if name == "dict" and not positional and node.keywords:
                # `dict(loss=loss, pred=pred)`: the display it builds
                return self.atoms(dict_display(node, scope), scope, d)
            if name in HOST_BUILTINS:
                return ["host"]
            if name == "getattr" and positional:
                # `getattr(outputs, "anomaly_map", None)`: an attribute of the object
                return self.attribute(
                    ast.Attribute(value=positional[0], attr="_", ctx=ast.Load()), scope, d
                )
            if name in CHOOSING_BUILTINS and positional:
                out: list[Atom] = []
                for arg in positional:
                    atoms = self.atoms(arg, scope, d)
                    if len(positional) == 1:
                        atoms = container_elements(atoms)  # `max(values)`: one of the values
                    out = union(out, atoms)
                return out
            if name in self.module_names or (self.star_import and name not in _BUILTIN_NAMES):
                # A function of this module, or a name a `from m import *` binds (the model
                # resolves it through the star imports, as Python does).
                return [self.call_atom(["c", "name", "." + name, args()], node, scope, d)]
            return ["unknown"]
        if not isinstance(func, ast.Attribute):
            return ["unknown"]
        receiver, method = func.value, func.attr
        if isinstance(receiver, ast.Name) and receiver.id == "self":
            if method in SELF_HOST_METHODS:
                return ["host"]
            if method == "forward":
                return ["device"]
            return [self.call_atom(["c", "self", method, args()], node, scope, d)]
        if is_super_call(receiver):
            return [self.call_atom(["c", "super", method, args()], node, scope, d)]
        if method in NUMBER_METHODS:
            return ["number"]
        if method in HOST_METHODS:
            return ["host"]
        if method in NUMPY_METHODS:
            return ["numpy"]  # `t.numpy()`, `a.astype(np.float32)`
        if method in TYPE_NAME_METHODS and not node.args and not node.keywords:
            return ["host"]  # `x.type()`: the type's name, a string
        if method in TYPE_NAME_METHODS and len(node.args) == 1 and not _dtype_name(node.args[0]):
            # `grid.type(x.type())`: a type name may name another device's tensor type
            # ("torch.cuda.FloatTensor"): where the result lives is not known here
            return ["unknown"]
        if (
            isinstance(receiver, ast.Attribute)
            and isinstance(receiver.value, ast.Name)
            and receiver.value.id == "self"
        ):
            return [
                self.call_atom(["c", "attr", f"{receiver.attr}.{method}", args()], node, scope, d)
            ]
        if (
            isinstance(receiver, ast.Attribute)
            and method in EXTERNAL_HOST_METHOD_NAMES
            and any(is_tensorish(a) for arg in args() for a in arg)
        ):
            # `self.model.crf.decode(em)` of tensors: host data when every `crf` attribute of
            # the project holds a library object whose `decode` returns some, else tensors as
            # from a model's `decode` (ProjectModel.call_value)
            return [
                self.call_atom(["c", "chain", f"{receiver.attr}.{method}", args()], node, scope, d)
            ]
        if isinstance(receiver, ast.Name) and receiver.id in scope.instances:
            return [
                self.call_atom(
                    ["c", "inst", f"{scope.instances[receiver.id]}.{method}", args()],
                    node,
                    scope,
                    d,
                )
            ]
        text = dotted(func)
        if text is not None:
            root = text.split(".", 1)[0]
            if root not in scope.env:
                if root in scope.imports:
                    return self.qualified_call(
                        self.qualify(text, scope.imports), node, scope, d, args
                    )
                if root in self.module_names:
                    return [
                        self.call_atom(["c", "name", "." + text, args()], node, scope, d)
                    ]  # `Cls.build(...)`
        if method in STRING_METHODS or (
            method in STRING_ARGUMENT_METHODS
            and (
                (method == "split" and not node.args and not node.keywords)
                or any(
                    isinstance(a, ast.JoinedStr)
                    or (isinstance(a, ast.Constant) and isinstance(a.value, str))
                    for a in node.args[:1]
                )
            )
        ):
            return ["host"]  # `key.split("::")`: a string's method, strings
        # A method of a value.
        base = self.atoms(receiver, scope, d)
        if base == ["module"]:
            if method in MODULE_SELF_METHODS:
                return ["module"]  # `self.expert.cpu()`: the module itself, offloaded
            if method in TENSOR_METHODS_OF_MODULES and any(
                is_tensorish(a) or is_param(a) for arg in args() for a in arg
            ):
                return ["device"]  # `model.generate(ids)`
            return ["unknown"]
        if all_host(base):
            return ["numpy"] if "numpy" in base else ["host"]
        if method in CONTAINER_METHODS:
            return ["host"]  # `x.copy()`, `x.append(...)`: a list or dict, not a tensor
        if any(isinstance(a, list) and a[0] in ("s", "t") for a in base):
            if method in ("get", "pop", "setdefault"):
                return container_elements(base)
            return ["unknown"]
        if method in ("get", "setdefault", "pop") and positional:
            first = positional[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                # `batch.get("lengths")`: an element of a container of the step's tensors
                return [["e", -1, base]] if not all(is_tensorish(a) for a in base) else base
        if method in ("cpu", "cuda", "xla", "to"):
            moved = (
                self.to_call(node, base, scope, d)
                if method == "to"
                else (["cpu"] if method == "cpu" else ["device"])
            )
            symbolic = [a for a in base if isinstance(a, list)]
            if not symbolic:
                return moved

            def module_stays(moved: list[Atom]) -> list[Atom]:
                # `make_model().to(device)`: a module stays a module wherever it moves.
                if moved in (["cpu"], ["device"]):
                    return [["mv", moved[0], symbolic]]
                return moved

            if len(moved) == 1 and isinstance(moved[0], list) and moved[0][0] == "md":
                _, place, on_cpu, otherwise = moved[0]
                return [["md", place, module_stays(on_cpu), module_stays(otherwise)]]
            return module_stays(moved)
        if method == "type_as" and positional:
            other = self.atoms(positional[0], scope, d)
            if other in (["device"], ["cpu"]):
                return other  # cast to the other's type and device
            symbolic = [a for a in other if isinstance(a, list)]
            if symbolic:
                return [["v", *symbolic]]  # a tensor where `other` turns out to be
            return base
        if method in MASK_METHODS or (method in ("any", "all") and (positional or node.keywords)):
            return mask_of([base])
        if method in ("generate", "sample", "encode", "decode") and any(
            is_tensorish(a) for arg in args() for a in arg
        ):
            return ["device"]
        if method in _NOT_MASK_METHODS:
            # `m.nonzero(as_tuple=True)`, `m.long()`, `m.sum()`: indices or numbers computed
            # from a mask, tensors where it is, no mask
            return [
                "device" if a == "mask" else (["v", *a[1:]] if _is_mask_atom(a) else a)
                for a in base
            ]
        return ["device" if a == "mask" else a for a in base]

    def qualified_call(
        self, qualified: str, node: ast.Call, scope: Scope, d: int, args: Any
    ) -> list[Atom]:
        top = qualified.split(".", 1)[0]
        if qualified in COPY_FUNCTIONS and node.args and not node.keywords:
            return self.atoms(node.args[0], scope, d)
        if top == "torch":
            return self.torch_call(qualified[len("torch.") :], node, scope, d)
        if top == "torch_scatter" and qualified.rsplit(".", 1)[-1][:1].islower():
            # `segment_coo(src, index, dim_size=n)`, `scatter_add(...)`: a torch op, its
            # result beside its input tensors
            return self.torch_call(qualified.rsplit(".", 1)[-1], node, scope, d)
        if (
            qualified.startswith("torchmetrics.functional.")
            and qualified.rsplit(".", 1)[-1][:1].islower()
        ):
            # `torchmetrics.functional.accuracy(logits, target)`: a metric computed by torch
            # ops, a tensor where its input tensors are
            return self.placed_like_inputs(node, scope, d)
        if top == "einops" and qualified.rsplit(".", 1)[-1] in _EINOPS_ARRAY_FUNCTIONS:
            # `einops.reduce(mask, "b n -> b", "sum")`: einops computes with the array's own
            # library, so the result is where its tensor is (the pattern is a string)
            return self.placed_like_inputs(node, scope, d)
        kind = package_kind(top)
        if kind is not None:
            return [kind]
        if top == "torchmetrics" and qualified.rsplit(".", 1)[-1][:1].isupper():
            return ["module"]
        return [self.call_atom(["c", "name", qualified, args()], node, scope, d)]

    def call_atom(self, atom: list[Atom], node: ast.Call, scope: Scope, d: int) -> list[Atom]:
        """A call of a project function with what its keywords pass (`["**", ...]` for a
        spread mapping), when it passes some: a helper placing its tensors on the device a
        parameter names (`device=None`) puts them where the call's `device=` says."""
        if node.keywords:
            atom.append([[k.arg or "**", self.atoms(k.value, scope, d)] for k in node.keywords])
        return atom

    def to_call(self, node: ast.Call, base: list[Atom], scope: Scope, d: int) -> list[Atom]:
        """`x.to(...)`: a device move, a dtype cast, or `.to(other_tensor)`."""
        if all_host(base):
            return base
        to_bool = False
        for arg in [*node.args, *(k.value for k in node.keywords if k.arg in ("device", "other"))]:
            literal = device_literal(arg)
            if literal is not None:
                return [literal]
            text = dotted(arg)
            if text is not None and self.qualify(text, scope.imports).startswith("torch."):
                to_bool = to_bool or self.qualify(text, scope.imports) == "torch.bool"
                continue  # a dtype such as torch.float16
            if isinstance(arg, ast.Attribute) and arg.attr == "device":
                # .to(x.device): with `x`; .to(self.device): the device. A receiver not yet
                # known (a parameter: a tensor or a module) keeps the plain move, so that a
                # module moved stays a module.
                beside = self.beside(arg, scope, d)
                pending = beside is not None and isinstance(beside[0], list)  # a "w" atom
                if beside is None or (pending and any(isinstance(a, list) for a in base)):
                    return ["device"]
                return beside
            place = self.device_atoms(arg, scope, d)
            if place == ["cpu_device"]:
                # `.to(device)` with `device` a CUDA chain: the CPU on a TPU host
                return ["cpu"]
            if isinstance(arg, ast.Name) and "device" in arg.id.lower():
                moved = ["device"]
            elif place in (["device"], ["cpu"]):
                return place
            else:
                moved = ["unknown"] if base == ["cpu"] else base
            return on_device(place, ["cpu"], moved)
        dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)
        text = dotted(dtype) if dtype is not None else None
        if to_bool or (text is not None and self.qualify(text, scope.imports) == "torch.bool"):
            return mask_of([base])  # `m.to(torch.bool)`: a boolean mask where `m` is
        return base

    def beside(self, device: ast.expr, scope: Scope, d: int) -> list[Atom] | None:
        """Where a tensor made or moved with `device=t.device` (`.to(t.device)`) lives: with
        `t`, on the CPU when `t` is a CPU tensor (`torch.zeros(1, device=points.device)` of
        host polylines), else on the device; a `["w", ...]` atom deciding that when `t` is a
        parameter or another value resolved later. None for `self.device`."""
        if not isinstance(device, ast.Attribute) or device.attr != "device":
            return None
        if isinstance(device.value, ast.Name) and device.value.id == "self":
            return None
        base = self.atoms(device.value, scope, d)
        if base == ["cpu"]:
            return ["cpu"]
        symbolic = [a for a in base if isinstance(a, list) and a[0] in _SYMBOLIC]
        if symbolic and all(a == "cpu" or a in symbolic for a in base):
            return [["w", symbolic]]
        return ["device"]

    def device_atoms(self, node: ast.expr, scope: Scope, d: int) -> list[Atom]:
        """The atoms of an expression used as a device: `["cpu_device"]` for the CPU on a TPU
        host (a `"cpu"` literal, a CUDA/MPS chain ending in it, a local bound to one)."""
        if device_literal(node) == "cpu":
            return ["cpu_device"]
        if isinstance(node, ast.IfExp) and cpu_or_cuda(node):
            # `"cpu" if backend == "gloo" else "cuda"`: an XLA run never makes a CUDA tensor
            # (the move fails there, as `.cuda()` does), so what runs there is on the CPU
            return ["cpu_device"]
        return self.atoms(node, scope, d)

    def imported_cpu_constant(self, name: str) -> bool:
        """Whether an imported name is a CPU tensor constant of a project module (see
        ModuleSummary.cpu_constants; False here)."""
        return False

    def global_atoms(self, name: str, scope: Scope) -> list[Atom] | None:
        """What a module global read in a function holds, where that is known (None here)."""
        return None

    def cuda_check(self, test: ast.expr, scope: Scope) -> bool:
        """Whether a test is False on a TPU host: a CUDA/MPS availability check, alone or as
        the first operand of an `and`."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return self.cuda_check(test.values[0], scope)
        if not isinstance(test, ast.Call):
            return False
        text = dotted(test.func)
        if text is None:
            return False
        qualified = self.qualify(text, scope.imports)
        return qualified.startswith("torch.") and qualified[len("torch.") :].startswith(
            TORCH_CUDA_CHECK_PREFIXES
        )

    def torch_call(self, rest: str, node: ast.Call, scope: Scope, d: int) -> list[Atom]:
        result = self.torch_result(rest, node, scope, d)
        last = rest.rsplit(".", 1)[-1]
        if last in TORCH_CPU_SECOND_RESULTS:
            # `out, lengths = pad_packed_sequence(packed)`: the lengths are a CPU tensor
            return [["t", result, ["cpu"]]]
        return result

    def torch_result(self, rest: str, node: ast.Call, scope: Scope, d: int) -> list[Atom]:
        last = rest.rsplit(".", 1)[-1]
        if last == "device" and node.args:
            # `torch.device("cuda" if torch.cuda.is_available() else "cpu")`: a device
            # object, the CPU on a TPU host or another device (host data either way)
            on_cpu = self.device_atoms(node.args[0], scope, d) == ["cpu_device"]
            return ["cpu_device"] if on_cpu else ["host"]
        if rest.startswith(TORCH_HOST_PREFIXES) or last in TORCH_HOST_FUNCTIONS:
            return ["host"]
        if rest.startswith("nn.") and last[:1].isupper():
            if last in ("Parameter", "Buffer"):
                return ["device"]
            return ["module"]
        device_arg = next((k.value for k in node.keywords if k.arg == "device"), None)
        if last in TORCH_FACTORIES:
            if device_arg is None:
                if last in _INPUT_PLACED_FACTORIES and any(
                    a not in _HOSTLIKE
                    for arg in node.args
                    if not isinstance(arg, ast.Starred)
                    for a in _tensors_in(self.atoms(arg, scope, d))
                ):
                    # `torch.bernoulli(probs)`, `torch.normal(mean, std)`: drawn where the
                    # input tensors are (the generic rule below), not on the CPU.
                    return self.placed_like_inputs(node, scope, d)
                return ["cpu"]
            beside = self.beside(device_arg, scope, d)
            if beside is not None:
                return beside
            return on_device(self.device_atoms(device_arg, scope, d), ["cpu"], ["device"])
        if last in LIKE_FACTORIES:
            if device_arg is not None:
                beside = self.beside(device_arg, scope, d)
                if beside is not None:
                    return beside
                return on_device(self.device_atoms(device_arg, scope, d), ["cpu"], ["device"])
            return self.atoms(node.args[0], scope, d) if node.args else ["unknown"]
        if rest.startswith("distributions.") and last[:1].isupper():
            # `torch.distributions.Beta(a, b)`: built from Python numbers, its parameters
            # are CPU tensors and so are its samples; from tensors, where they are.
            given = [
                a
                for arg in (*node.args, *(k.value for k in node.keywords if k.arg))
                if not isinstance(arg, ast.Starred)
                for a in _tensors_in(self.atoms(arg, scope, d))
            ]
            if given and all(a in ("number", "none", "cpu") for a in given):
                return ["cpu"]
        return self.placed_like_inputs(node, scope, d, last)

    def placed_like_inputs(
        self, node: ast.Call, scope: Scope, d: int, last: str = ""
    ) -> list[Atom]:
        """A torch function's result where its tensor arguments are."""
        # Containers passed to torch (`torch.cat([a, b])`) count as the tensors they hold.
        kinds = [
            _tensors_in(self.atoms(a, scope, d))
            for a in node.args
            if not isinstance(a, ast.Starred)
        ]
        flat = [a for k in kinds for a in k]
        if kinds and kinds[0] == ["cpu"] and not any(a in ("device", "mask") for a in flat):
            # `torch.multinomial(torch.tensor(p), n)`: the result lives with its input
            return ["cpu"]
        if last in TORCH_MASK_FUNCTIONS:
            return mask_of(kinds)
        out: list[Atom] = []
        for atoms in kinds:
            out = union(out, [a for a in atoms if a not in _HOSTLIKE])
        if last in ("any", "all") and (
            "dim" in [k.arg for k in node.keywords] or len(node.args) > 1
        ):
            return ["mask"]
        out = ["device" if a == "mask" else a for a in out]
        if "device" in out:
            return ["device"]
        if any(isinstance(a, list) for a in out):
            return [["v", *out]]  # a tensor whatever its symbolic inputs turn out to be
        return out or ["unknown"]


# --- atoms ---------------------------------------------------------------------------------


def tensor_on_cuda(test: ast.expr) -> bool:
    """`x.is_cuda` or `x.device.type == "cuda"`: a test that a tensor is on a CUDA device,
    False for every tensor of an XLA run (on the CPU or "xla")."""
    if isinstance(test, ast.Attribute):
        return test.attr == "is_cuda"
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Eq, ast.Is))
        and isinstance(test.left, ast.Attribute)
        and test.left.attr == "type"
        and isinstance(test.left.value, ast.Attribute)
        and test.left.value.attr == "device"
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "cuda"
    )


def _number_literal(node: ast.expr) -> bool:
    """`3`, `-0.5`, `True`: a Python number written out."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float, bool)


def _scalar_tensor(node: ast.expr) -> bool:
    """`torch.tensor(3)`, `torch.sqrt(torch.tensor(2.0))`: a 0-dim tensor built from a number
    written out (no `device=`), or a torch function of one."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords):
        return False
    name = dotted(node.func) or ""
    if not name.startswith("torch."):
        return False
    if name in ("torch.tensor", "torch.as_tensor"):
        return _number_literal(node.args[0])
    return _scalar_tensor(node.args[0])


def device_literal(node: ast.expr) -> str | None:
    """ "cpu" for `"cpu"` / `torch.device("cpu")`, "device" for another literal device."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return "cpu" if node.value.split(":", 1)[0] == "cpu" else "device"
    if isinstance(node, ast.Call) and node.args:
        text = dotted(node.func)
        if text is not None and text.rsplit(".", 1)[-1] == "device":
            return device_literal(node.args[0])
    return None


def cpu_or_cuda(node: ast.IfExp) -> bool:
    """`"cpu" if c else "cuda"` (or the other way round, `torch.device(...)` of either): the
    CPU or a CUDA device, written out."""
    branches = (node.body, node.orelse)
    return any(device_literal(b) == "cpu" for b in branches) and all(
        device_literal(b) == "cpu" or _cuda_literal(b) for b in branches
    )


def _cuda_literal(node: ast.expr) -> bool:
    """`"cuda"`, `"cuda:0"`, `torch.device("cuda")`."""
    if isinstance(node, ast.Call) and len(node.args) == 1:
        text = dotted(node.func)
        if text is not None and text.rsplit(".", 1)[-1] == "device":
            node = node.args[0]
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.split(":", 1)[0] == "cuda"
    )


def on_device(place: list[Atom], on_cpu: list[Atom], otherwise: list[Atom]) -> list[Atom]:
    """What a move to (or a factory on) the device `place` gives: `on_cpu` when `place` is
    the CPU on a TPU host, `otherwise` when it is another value, and an `["md", ...]` atom
    deciding that when `place` is resolved (`device = get_device()`)."""
    if place == ["cpu_device"]:
        return on_cpu
    if any(isinstance(a, list) and a[0] in _SYMBOLIC for a in place):
        return [["md", place, on_cpu, otherwise]]
    return otherwise


def cpu_branch(node: ast.IfExp) -> ast.expr | None:
    """The branch of `a if d != torch.device("cpu") else d` (or `d == "cpu"`, `d.type ==
    "cpu"`) that is the tested device `d` where the test says it is the CPU."""
    test = node.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op = test.ops[0]
    if not isinstance(op, (ast.Eq, ast.NotEq)):
        return None
    left, right = test.left, test.comparators[0]
    if device_literal(right) == "cpu":
        tested = left
    elif device_literal(left) == "cpu":
        tested = right
    else:
        return None
    if isinstance(tested, ast.Attribute) and tested.attr == "type":
        tested = tested.value  # `d.type == "cpu"`
    branch = node.body if isinstance(op, ast.Eq) else node.orelse
    return branch if ast.dump(branch) == ast.dump(tested) else None


# Tensor methods whose result is never a boolean mask, whatever the tensor: indices, counts,
# sums, numbers of another dtype.
_NOT_MASK_METHODS = frozenset(
    {
        "nonzero",
        "argwhere",
        "count_nonzero",
        "argmax",
        "argmin",
        "argsort",
        "sum",
        "cumsum",
        "mean",
        "prod",
        "long",
        "int",
        "float",
        "double",
        "half",
        "bfloat16",
    }
)


def _is_mask_atom(atom: Atom) -> bool:
    return isinstance(atom, list) and bool(atom) and atom[0] == "m"


# Builtins whose result iterates over some of their last argument's elements, by the number
# of positional arguments they take.
_SUBSET_BUILTINS = {"filter": 2, "reversed": 1, "iter": 1}
_TENSOR_ATOMS = frozenset({"device", "cpu", "mask"})
# Symbolic atoms of values that may be containers (a parameter, an attribute, a call's
# result, an element or entry of another value).
_ITERABLE_SYMBOLS = frozenset({"p", "a", "c", "e", "k", "g"})


def _not_a_tensor(current: list[Atom]) -> list[Atom]:
    """What a value is where `isinstance(x, torch.Tensor)` fails: host data, or, for a
    parameter or another value known only by where it comes from, a container of what that
    value would hold (`clip(params)` given `model.parameters()`: `for p in params` yields the
    device parameters; given a number, host data)."""
    if current and all(isinstance(a, list) and a[0] in _ITERABLE_SYMBOLS for a in current):
        return [["s", [["e", -1, list(current)]]]]
    return ["host"]


def _may_hold_tensor(atom: Atom, depth: int = 0) -> bool:
    """Whether a value of this atom may be or hold a tensor: a tensor atom, a symbolic value,
    or a tuple or container with one inside (not numbers, host data or unknown values)."""
    if isinstance(atom, str):
        return atom in _TENSOR_ATOMS
    if depth > 6:
        return True
    if atom[0] == "t":
        return any(_may_hold_tensor(a, depth + 1) for part in atom[1:] for a in part)
    if atom[0] == "s":
        return any(_may_hold_tensor(a, depth + 1) for a in atom[1])
    return True


def _listed(rows: list[Atom]) -> list[Atom] | None:
    """What `list(x)` holds for `x` of these atoms: the rows of a tensor, where it is
    (`list(t)`); the elements of a container (the keys of a dict); the elements of a
    parameter, attribute or call result, whatever it turns out to be (`list(params)`). None
    when a part is a host value or not known (a plain host list)."""
    if not rows:
        return None
    elements: list[Atom] = []
    for a in rows:
        if is_tensorish(a) or (isinstance(a, list) and a[0] in ("v", "w", "x")):
            elements = union(elements, ["device" if a == "mask" else a])
        elif isinstance(a, list) and a[0] == "s":
            held = a[2] if len(a) > 2 else a[1]
            if not any(_may_hold_tensor(h) for h in held):
                return None  # a container of host data or unknown values: host data, as before
            elements = union(elements, held)
        elif isinstance(a, list) and a[0] in _ITERABLE_SYMBOLS:
            elements = union(elements, [["e", -1, [a]]])
        else:
            return None
    if all(isinstance(a, list) and a[0] == "s" and len(a) <= 2 for a in rows) and len(rows) == 1:
        return rows  # `list(values)` of one container: the same container
    return [["s", elements]]


def is_tensorish(atom: Atom) -> bool:
    return atom in ("device", "cpu", "mask")


def maskish(atoms: list[Atom]) -> bool:
    return "mask" in atoms or any(isinstance(a, list) and a[0] == "m" for a in atoms)


def as_mask(left: list[Atom], right: list[Atom]) -> list[Atom]:
    """A mask whose tensor-ness depends on the symbolic parts of its operands."""
    parts: list[Atom] = []
    for atom in (*left, *right):
        if isinstance(atom, list):
            parts.extend(atom[1:] if atom[0] == "m" else [atom])
        elif atom == "unknown":
            parts.append(atom)
    return [["m", *parts]]


def mask_of(operands: list[list[Atom]]) -> list[Atom]:
    """A boolean mask computed from `operands`: on the device when one of them is, on the CPU
    when they are CPU tensors, else a mask whose placement is that of its symbolic parts."""
    flat = [a for atoms in operands for a in atoms]
    if any(a in ("device", "mask") for a in flat):
        return ["mask"]
    symbolic = [a for a in flat if isinstance(a, list) or a == "unknown"]
    if "cpu" in flat and not any(isinstance(a, list) for a in symbolic):
        # torch combines a CPU tensor elementwise only with numbers and other CPU tensors
        return ["cpu"]
    return [["m", *symbolic, *(["cpu"] if "cpu" in flat else [])]]


def is_param(atom: Atom) -> bool:
    return isinstance(atom, list) and atom[0] == "p"


def from_params(atoms: list[Atom], depth: int = 0) -> bool:
    """Whether a value is a parameter or a part of one (`batch`, `batch[0]`, `x` of
    `x, y = batch`, `batch["meta"]`), not a value computed from it."""
    if not atoms or depth > 8:
        return False
    for atom in atoms:
        if not isinstance(atom, list):
            return False
        if atom[0] == "p":
            continue
        if atom[0] not in ("e", "k", "g") or not from_params(atom[2], depth + 1):
            return False
    return True


def _string_or_none(node: ast.expr) -> bool:
    """A string, `None`, or a list/tuple literal of them: what no tensor is compared with."""
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.Constant):
        return type(node.value) is str or node.value is None
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        return all(
            isinstance(e, ast.JoinedStr) or (isinstance(e, ast.Constant) and type(e.value) is str)
            for e in node.elts
        )
    return False


def is_string(node: ast.expr, strings: frozenset[str] = frozenset()) -> bool:
    """Whether an expression surely holds a string: a literal or f-string, `str(...)`,
    `os.path.basename(p)`, `name.strip()`, `"-".join(parts)`, `os.path.splitext(p)[0]`,
    `p.split("/")[-1]`, `a + ".wav"`, or a name of `strings` (string_names)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.Name):
        return node.id in strings
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return is_string(node.left, strings) or (
            isinstance(node.op, ast.Add) and is_string(node.right, strings)
        )
    if isinstance(node, ast.IfExp):
        return is_string(node.body, strings) and is_string(node.orelse, strings)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call):
        # `os.path.splitext(p)[0]`, `p.split("/")[-1]` (a tensor's `split` takes a size)
        call = node.value
        name = dotted(call.func)
        if name in ("os.path.splitext", "osp.splitext", "os.path.split", "osp.split"):
            return True
        if isinstance(call.func, ast.Attribute) and call.func.attr in ("split", "rsplit"):
            return all(
                isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args[:1]
            ) and (bool(call.args) or is_string(call.func.value, strings))
        return False
    if isinstance(node, ast.Call):
        name = dotted(node.func)
        if name in STRING_FUNCTIONS:
            return True
        if isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr == "join":
                # `sep.join(parts)`: str.join takes one iterable (a thread's `join()` takes
                # none or a timeout, os.path.join is in STRING_FUNCTIONS; torch has no join)
                return is_string(node.func.value, strings) or (
                    len(node.args) == 1
                    and not node.keywords
                    and not isinstance(node.args[0], ast.Constant)
                )
            return attr in STRING_RESULT_METHODS
    return False


def all_host(atoms: list[Atom]) -> bool:
    return bool(atoms) and all(a in _HOSTLIKE for a in atoms)


_EMPTY_LIST: Atom = ["s", []]


def union(a: list[Atom], b: list[Atom]) -> list[Atom]:
    out = list(a)
    for atom in b:
        if atom not in out:
            if _is_dict_atom(atom):
                merged = _merge_dict(out, atom)
                if merged is not None:
                    out = merged
                    continue
            out.append(atom)
    if _EMPTY_LIST in out and any(_filled_list(x) for x in out):
        # A list that is empty on one path and holds values on another holds those values
        # (`found = []` in the branch that found none): the empty one adds no element.
        out.remove(_EMPTY_LIST)
    if len(out) > MAX_ATOMS:
        return ["unknown"]
    return out


def _is_dict_atom(atom: Atom) -> bool:
    return isinstance(atom, list) and len(atom) == 3 and atom[0] == "s"


def _merge_dict(out: list[Atom], atom: list[Any]) -> list[Atom] | None:
    """`out` with the dict `atom` merged into the dict it already holds (None when it holds
    none): a dict filled under conditions (`if want_mse: out["mse"] = ...`, several times)
    is one dict holding any of the values, not one atom per combination of branches."""
    for index, other in enumerate(out):
        if _is_dict_atom(other) and other is not atom:
            held = union(other[1], atom[1])
            keys = union(other[2], atom[2])
            merged = list(out)
            merged[index] = ["s", held, keys]
            return merged
    return None


def _is_text(node: ast.expr) -> bool:
    """A string literal or an f-string."""
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def _dtype_name(node: ast.expr) -> bool:
    """`torch.float16`, `torch.FloatTensor` or a CPU type's name: a cast that stays put."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return ".cuda." not in node.value and ".xla." not in node.value
    text = dotted(node)
    return text is not None and text.startswith(("torch.", "np.", "numpy."))


def _filled_list(atom: Atom) -> bool:
    return isinstance(atom, list) and atom[0] == "s" and len(atom) == 2 and bool(atom[1])


def container_elements(atoms: list[Atom]) -> list[Atom]:
    """What a container value holds: the elements of its tuple and container atoms, rows of
    its tensors, an element of a symbolic value."""
    out: list[Atom] = []
    for atom in atoms:
        if isinstance(atom, list) and atom[0] == "s":
            out = union(out, atom[1] or ["unknown"])
        elif isinstance(atom, list) and atom[0] == "t":
            for element in atom[1:]:
                out = union(out, element)
        elif isinstance(atom, list):
            out = union(out, [["e", -1, [atom]]])
        elif atom in ("number", "host", "none"):
            out = union(out, ["host"])
        else:
            out = union(out, ["device" if atom == "mask" else atom])
    return out or ["unknown"]


def iterated_elements(atoms: list[Atom]) -> list[Atom]:
    """What a `for` over a container value yields: a dict's keys (`for name in features`
    over `{name: t ...}` gives the names), the elements of other containers."""
    out: list[Atom] = []
    for atom in atoms:
        if isinstance(atom, list) and atom[0] == "s" and len(atom) > 2:
            out = union(out, atom[2] or ["unknown"])
        else:
            out = union(out, container_elements([atom]))
    return out or ["unknown"]


def _tensors_in(atoms: list[Atom]) -> list[Atom]:
    if any(isinstance(a, list) and a[0] in ("s", "t") for a in atoms):
        return container_elements(atoms)
    return atoms


def arith(left: list[Atom], right: list[Atom]) -> list[Atom]:
    """`a + b`: a tensor if either side is one; numbers stay numbers."""
    both = union(left, right)
    if "cpu" in both and not any(a in ("device", "mask") for a in both):
        # torch combines a CPU tensor elementwise only with numbers and other CPU tensors: on
        # the CPU, unless a symbolic operand turns out to be a device tensor.
        symbolic = [a for a in both if isinstance(a, list)]
        return [["x", "cpu", *symbolic]] if symbolic else ["cpu"]
    tensors = [a for a in both if a not in _HOSTLIKE]
    if tensors:
        symbolic = [a for a in tensors if isinstance(a, list)]
        if (
            len(symbolic) > 1
            and len(symbolic) == len(tensors)
            and all(a[0] in ("p", "e", "a", "k", "g") for a in symbolic)
        ):
            # `keep[:, 0] / rows` of parameters, attributes and their elements: a CPU tensor
            # among them keeps the result on the CPU unless another turns out to be on the
            # device (`["x", ...]`). (What calls return may be a CPU fallback beside a device
            # value, `t.mean() if len(t) else torch.tensor(0)`: those stay any of them.)
            return [["x", *tensors]]
        return [a if a != "mask" else "device" for a in tensors]
    if "numpy" in both:
        return ["numpy"]
    if all(isinstance(a, str) for a in both) and both and set(both) <= {"host", "none"}:
        return ["host"]  # strings, lists
    return ["number"] if both else ["unknown"]


# The local (no name can spell it) that holds the `batch` parameter of a step method: what
# the loader's collate built, its tuple positions read from the project's collate functions.
STEP_BATCH = "#batch"


def _step_batch(value: list[Atom], scope: Scope) -> bool:
    """Whether `value` is the `batch` parameter of a LightningModule step (a method whose
    name has "step": `training_step`, `shared_step`), not rebound since."""
    return len(value) == 1 and scope.env.get(STEP_BATCH) == value


def tuple_elements(value: list[Atom], count: int) -> list[list[Atom]] | None:
    """The per-element atoms of a tuple value of `count` elements (None if unknown)."""
    tuples = [a for a in value if isinstance(a, list) and a[0] == "t" and len(a) - 1 == count]
    if len(tuples) == 1 and len(value) == 1:
        return [list(e) for e in tuples[0][1:]]
    if any(isinstance(a, list) and a[0] in _SYMBOLIC for a in value):
        # Unpacking a call's or a parameter's value: element i of it, resolved later.
        return [[["e", i, value]] for i in range(count)]
    if any(isinstance(a, list) and a[0] in ("s", "t") for a in value):
        elements = container_elements(value)
        return [list(elements) for _ in range(count)]
    if value and all(is_tensorish(a) for a in value):
        # unpacking a tensor gives tensors
        return [["device" if a == "mask" else a for a in value] for _ in range(count)]
    if all_host(value):
        return [["numpy"] if value == ["numpy"] else ["host"] for _ in range(count)]
    return None


MISSING = object()


def set_local(scope: Scope, name: str, value: list[Atom]) -> None:
    """Bind a local, journaling its previous value for the enclosing `if` branch."""
    if scope.journals:
        journal = scope.journals[-1]
        if name not in journal:
            journal[name] = scope.env.get(name, MISSING)
    scope.env[name] = value
    if name in scope.keyed:
        forget_entries(scope, name)


def forget_entries(scope: Scope, name: str) -> None:
    """Drop what the string keys of local `name` were bound to (it is another dict now, or
    was changed by a method)."""
    prefix = name + "["
    for key in [k for k in scope.env if k.startswith(prefix)]:
        if scope.journals:
            journal = scope.journals[-1]
            if key not in journal:
                journal[key] = scope.env[key]
        del scope.env[key]


def capturable_flag(test: ast.expr) -> bool:
    """`group["capturable"]`, `self.defaults["fused"]`, `capturable` (or an `or` of them): a
    torch optimizer flag of OPTIMIZER_DEFAULT_OFF, off unless the project turns it on."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return all(capturable_flag(value) for value in test.values)
    if isinstance(test, ast.Subscript) and isinstance(test.slice, ast.Constant):
        return test.slice.value in OPTIMIZER_DEFAULT_OFF
    if isinstance(test, ast.Attribute):
        return test.attr in OPTIMIZER_DEFAULT_OFF
    return isinstance(test, ast.Name) and test.id in OPTIMIZER_DEFAULT_OFF


def _optimizer_host_state(node: ast.Subscript, scope: Scope, atoms: Any) -> bool:
    """`X["step"]` (a key of OPTIMIZER_HOST_STATE_KEYS) of a torch optimizer's per-parameter
    state: `self.state[p]` in a class deriving from a torch optimizer (`torch.optim.*`, a
    base named `*Optimizer`), directly or through a local bound to it (`state =
    self.state[p]`), or `opt.state[p]` of a receiver named for an optimizer."""
    index = node.slice
    if not (
        isinstance(index, ast.Constant)
        and isinstance(index.value, str)
        and index.value in OPTIMIZER_HOST_STATE_KEYS
    ):
        return False
    base = node.value
    if (
        isinstance(base, ast.Subscript)
        and isinstance(base.value, ast.Attribute)
        and base.value.attr == "state"
    ):
        owner = (dotted(base.value.value) or "").rsplit(".", 1)[-1]
        if owner == "opt" or re.search(r"(?i)optim", owner):
            return True  # `opt.optimizer.state[p]["step"]`: a torch optimizer's
    cls = scope.cls
    if cls is None or not any(
        b.startswith("torch.optim.") or b.rsplit(".", 1)[-1].endswith("Optimizer")
        for b in cls.bases
    ):
        return False
    if f"state[][{index.value!r}]" in cls.attributes or "state[]" in cls.attributes:
        return False  # the class stores it itself: what it stores says (`capturable_flag`)
    if isinstance(base, ast.Name) and base.id in scope.env:
        held = scope.env[base.id]
    elif isinstance(base, ast.Subscript):
        held = atoms(base, scope, 0)
    else:
        return False
    return held == [["e", -1, [["a", "state"]]]]


def entry_key(node: ast.expr) -> tuple[str, str] | None:
    """(local, environment key) of `local["key"]`, else None."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return node.value.id, f"{node.value.id}[{node.slice.value!r}]"
    return None


def entry_attribute(base: list[Any], key: str) -> tuple[str, str] | None:
    """(made-up attribute name, whole) of entry `key` of the dict attribute an atom list
    names: `self.state["k"]` (base `[["a", "state"]]`) is `state['k']` of `state`;
    `self.state[p]["step"]` (base `[["e", -1, [["a", "state"]]]]`) is `state[]['step']` of
    `state[]` (the whole entries `self.state[p] = v`). None for other bases."""
    if len(base) != 1 or not isinstance(base[0], list):
        return None
    atom = base[0]
    if atom[0] == "a":
        return f"{atom[1]}[{key!r}]", atom[1]
    if (
        atom[0] == "e"
        and len(atom) == 3
        and atom[1] == -1
        and len(atom[2]) == 1
        and isinstance(atom[2][0], list)
        and atom[2][0][0] == "a"
    ):
        name = atom[2][0][1]
        return f"{name}[][{key!r}]", f"{name}[]"
    return None


def self_entry(target: ast.expr, scope: Scope) -> str | None:
    """The made-up attribute name (see `entry_attribute`) a store to `target` writes:
    `self.state["k"]`, `self.state[p]["step"]` or, through a local `state = self.state[p]`,
    `state["step"]`; `state[]` for `self.state[p]` itself. None for other targets."""
    if not isinstance(target, ast.Subscript):
        return None
    index = target.slice
    base = target.value
    name = self_attribute_name(base)
    if not (isinstance(index, ast.Constant) and isinstance(index.value, str)):
        return f"{name}[]" if name is not None else None
    key = index.value
    if name is not None:
        return f"{name}[{key!r}]"
    if isinstance(base, ast.Subscript):
        name = self_attribute_name(base.value)
        return f"{name}[][{key!r}]" if name is not None else None
    if isinstance(base, ast.Name):
        for atom in scope.env.get(base.id, ()):
            if isinstance(atom, list):
                found = entry_attribute([atom], key)
                if found is not None and found[1].endswith("[]"):
                    return found[0]
    return None


# Methods that add to a list or set in place, and the argument they add.
_GROWING = {"append": -1, "add": -1, "insert": -1}
# Methods that change a dict's entries in place.
_DICT_CHANGING = frozenset({"update", "pop", "popitem", "clear", "setdefault"})


def grow_container(scope: Scope, call: ast.Call, evaluator: ValueEvaluator) -> None:
    """`xs.append(v)` / `xs.extend(vs)` on a local list: it holds `v` too (a list built in a
    loop and handed on holds what was appended, not nothing); `d.update(...)` forgets what
    the string keys of a local dict were bound to."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return
    key = entry_key(func.value)
    if key is not None and key[1] in scope.env and func.attr in _GROWING and call.args:
        # `preds["masks"].append(m)` on an entry of a local dict built here: a list (an empty
        # `list()` is opaque host data until something is appended) holding `m` too
        current = scope.env[key[1]]
        held: list[Atom] = []
        if current == ["host"]:
            held = []
        elif len(current) == 1 and isinstance(current[0], list) and current[0][0] == "s":
            held = current[0][1]
        else:
            return
        added = [a for a in evaluator.atoms(call.args[-1], scope) if a != "none"]
        set_local(scope, key[1], [["s", union(held, added)]])
        return
    if not isinstance(func.value, ast.Name):
        return
    name, method = func.value.id, func.attr
    if method in _DICT_CHANGING:
        if method in ("update", "setdefault"):
            _store_entries(scope, name, call, method, evaluator)
        if name in scope.keyed:
            forget_entries(scope, name)
        return
    if method not in _GROWING and method != "extend":
        return
    current = scope.env.get(name)
    if not call.args or current is None or len(current) != 1:
        return
    atom = current[0]
    if not (isinstance(atom, list) and atom[0] == "s" and len(atom) == 2):
        return
    added = evaluator.atoms(call.args[_GROWING.get(method, 0)], scope)
    if method == "extend":
        # an empty list extends by nothing (`parts = []` in the branch that found none)
        filled = [a for a in added if not (isinstance(a, list) and a[0] == "s" and not a[1])]
        added = container_elements(filled) if filled else []
    added = [a for a in added if a != "none"]
    held = union(atom[1], added)
    if held != atom[1]:
        set_local(scope, name, [["s", held]])


def _store_entries(
    scope: Scope, name: str, call: ast.Call, method: str, evaluator: ValueEvaluator
) -> None:
    """`d.update(other, k=v)` / `d.setdefault(k, v)` on a local dict: it holds their values
    too (those of a dict literal or comprehension; whatever an opaque mapping holds)."""
    if name not in scope.env:
        return
    values: list[Atom] = []
    keys: list[Atom] = []
    if method == "setdefault":
        if len(call.args) == 2:
            values = evaluator.atoms(call.args[1], scope)
            keys = evaluator.atoms(call.args[0], scope)
    else:
        for argument in call.args:
            for atom in evaluator.atoms(argument, scope):
                if isinstance(atom, list) and atom[0] == "s" and len(atom) > 2:
                    values, keys = union(values, atom[1]), union(keys, atom[2])
                else:
                    values, keys = union(values, ["unknown"]), union(keys, ["unknown"])
        for keyword in call.keywords:
            if keyword.arg is None:  # `d.update(**other)`
                values, keys = union(values, ["unknown"]), union(keys, ["unknown"])
            else:
                values = union(values, evaluator.atoms(keyword.value, scope))
                keys = union(keys, ["host"])
    store_in_container(scope, name, values, keys)


def store_in_container(scope: Scope, name: str, values: list[Atom], keys: list[Atom]) -> None:
    """A local container (`["s", values]`, or a dict's `["s", values, keys]`) holds these
    values (and keys) too, its entries read at string keys kept (`d["loss"]`)."""
    current = scope.env.get(name)
    values = [a for a in values if a != "none"]
    if not current or not values:
        return
    grown: list[Atom] = []
    for atom in current:
        if isinstance(atom, list) and atom[0] == "s":
            held = ["s", union(atom[1], values)]
            if len(atom) > 2:
                held.append(union(atom[2], keys or ["unknown"]))
            atom = held
        grown.append(atom)
    if grown == current:
        return
    if scope.journals:
        journal = scope.journals[-1]
        if name not in journal:
            journal[name] = current
    scope.env[name] = grown


def dict_display(node: ast.expr, scope: Scope) -> ast.expr:
    """`dict(loss=loss, pred=pred)` read as the display `{"loss": loss, "pred": pred}` it
    builds (keywords only, Python's own `dict`: its keys are the keyword names, a `**other`
    spread as in a display); any other node as it is."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "dict"
        and not node.args
        and node.keywords
        and "dict" not in scope.env
        and "dict" not in scope.imports
    ):
        return node
    keys: list[ast.expr | None] = [
        None if k.arg is None else ast.Constant(value=k.arg) for k in node.keywords
    ]
    return ast.Dict(keys=keys, values=[k.value for k in node.keywords])


def dict_entries(node: ast.expr, scope: Scope, evaluator: ValueEvaluator) -> list[list[Any]] | None:
    """The string keys of a returned dict and what each holds: a dict literal whose keys are
    all strings (`{"mse": err}`), or a local dict whose string keys this function bound
    (`out = {}`, then `out["mse"] = chunked(...)`: the last value bound at each key). None
    when they are not known (a computed key, an update); after a `**other` spread, the keys
    written after it. `dict(mse=err)` is the display it builds."""
    node = dict_display(node, scope)
    if isinstance(node, ast.Dict):
        if not node.keys or not all(
            k is None or (isinstance(k, ast.Constant) and isinstance(k.value, str))
            for k in node.keys
        ):
            return None
        # `{"loss": loss, **parts, "pred": pred}`: a spread may bind any key, so the entries
        # known are those written after the last one (a key not among them: any value)
        last = max((i for i, k in enumerate(node.keys) if k is None), default=-1)
        entries = [
            [k.value, evaluator.atoms(v, scope)]  # type: ignore[union-attr]
            for k, v in list(zip(node.keys, node.values, strict=True))[last + 1 :]
        ]
        return entries or None
    if isinstance(node, ast.Name) and node.id in scope.keyed:
        prefix = node.id + "["
        entries = []
        for k, v in scope.env.items():
            if k.startswith(prefix) and k.endswith("]"):
                try:
                    key = ast.literal_eval(k[len(prefix) : -1])
                except (ValueError, SyntaxError):
                    continue
                if isinstance(key, str):
                    entries.append([key, v])
        return entries or None
    return None


def record_fields(
    node: ast.expr, scope: Scope, evaluator: ValueEvaluator
) -> list[list[Any]] | None:
    """The fields of a record a returned call builds: a class (a capitalized name) called
    with keyword arguments only (`return ModelOutput(loss=loss, logits=logits)`), each
    keyword an attribute of the record holding what it passes (`[".loss", atoms]`, the
    key marked by its dot as an attribute, `out.loss`). None for other values."""
    if not (isinstance(node, ast.Call) and not node.args and node.keywords):
        return None
    name = dotted(node.func)
    if name is None or not name.rsplit(".", 1)[-1][:1].isupper():
        return None
    if any(k.arg is None for k in node.keywords) or name.split(".", 1)[0] in scope.env:
        return None
    return [["." + k.arg, evaluator.atoms(k.value, scope)] for k in node.keywords]  # type: ignore[operator]


def with_entries(atoms: list[Atom], entries: list[list[Any]]) -> list[Atom]:
    """The dict atoms of a returned value with its known entries attached."""
    out: list[Atom] = []
    for atom in atoms:
        if isinstance(atom, list) and atom[0] == "s" and len(atom) == 3:
            atom = [*atom, entries]
        out.append(atom)
    return out
