"""Static-shape rewrites of losses over boolean-mask selections (TPU202).

    F.cross_entropy(z[m], y[m])          F.cross_entropy(z.movedim(-1, 1), torch.where(m, y, -100))
    F.cross_entropy(z.permute(0, 2, 3, 1)[m], y[m])
                                         F.cross_entropy(z, torch.where(m, y, -100))
    self.ce(z[m], y[m])                  self.ce(z.movedim(-1, 1), torch.where(m, y, -100))
    F.mse_loss(p[m], t[m])               torch.where(m, F.mse_loss(p, t, reduction="none"), 0).sum()
                                         / m.sum()
    self.bce(p[m], t[m])                 the same through F.binary_cross_entropy(..., "none")

Cross-entropy and NLL skip targets equal to `ignore_index` exactly as if they were not there
(the mean divides by the weight of the kept targets, label smoothing included), so moving
the unselected targets to `ignore_index` is exact; the class dimension, last in `z[m]`, goes
back to dimension 1 where the loss expects it. Elementwise losses are computed unreduced
and reduced over the mask.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.rule import FixSpec, ImportSpec

from ..shared.tensors import Bindings, keyword, positional
from .expressions import atom, bare, expression, fits, torch_alias
from .masks import mask_form
from .purity import is_pure
from .regions import Leaves, Region, guarded_leaves, operand, unselected

_CLASS_LOSSES = frozenset({"cross_entropy", "nll_loss"})
_ELEMENTWISE_LOSSES = frozenset(
    {
        "mse_loss",
        "l1_loss",
        "smooth_l1_loss",
        "huber_loss",
        "binary_cross_entropy",
        "binary_cross_entropy_with_logits",
    }
)
_MODULES = {
    "CrossEntropyLoss": "cross_entropy",
    "NLLLoss": "nll_loss",
    "MSELoss": "mse_loss",
    "L1Loss": "l1_loss",
    "SmoothL1Loss": "smooth_l1_loss",
    "HuberLoss": "huber_loss",
    "BCELoss": "binary_cross_entropy",
    "BCEWithLogitsLoss": "binary_cross_entropy_with_logits",
}
# Keyword arguments each loss may carry through the rewrite unchanged.
_KEPT = {
    "cross_entropy": frozenset({"weight", "ignore_index", "label_smoothing", "reduction"}),
    "nll_loss": frozenset({"weight", "ignore_index", "reduction"}),
    "mse_loss": frozenset({"reduction"}),
    "l1_loss": frozenset({"reduction"}),
    "smooth_l1_loss": frozenset({"reduction", "beta"}),
    "huber_loss": frozenset({"reduction", "delta"}),
    "binary_cross_entropy": frozenset({"reduction"}),
    "binary_cross_entropy_with_logits": frozenset({"reduction", "pos_weight"}),
}


@dataclass
class _Loss:
    call: cst.Call
    name: str  # the functional name: cross_entropy, mse_loss, ...
    module: cst.BaseExpression | None  # `self.criterion` for a module instance; None: F.*
    ctor: cst.Call | None  # the module's constructor call

    def option(self, name: str) -> cst.Arg | None:
        """A keyword given to the call (functional) or to the constructor (module)."""
        source = self.ctor if self.module is not None else self.call
        return keyword(source, name) if source is not None else None


def _qualified_module(ctx: FileContext, call: cst.Call) -> str | None:
    qualified = ctx.qualify(call.func) or ""
    for prefix in ("torch.nn.modules.loss.", "torch.nn."):
        if qualified.startswith(prefix) and qualified[len(prefix) :] in _MODULES:
            return _MODULES[qualified[len(prefix) :]]
    return None


def _constructor(ctx: FileContext, bindings: Bindings, func: cst.BaseExpression) -> cst.Call | None:
    """The `nn.*Loss(...)` call a loss module was built with: `self.ce = nn.CrossEntropyLoss()`
    in the class, or a local `ce = nn.CrossEntropyLoss()`."""
    if isinstance(func, cst.Call):
        return func
    if isinstance(func, cst.Name):
        binding = bindings.lookup(func.value)
        if binding is not None and isinstance(binding.value, cst.Call):
            return binding.value
        return None
    if (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value == "self"
        and ctx.klass is not None
    ):
        found = None
        for node in _walk(ctx.klass.node):
            if (
                isinstance(node, cst.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0].target, cst.Attribute)
                and isinstance(node.targets[0].target.value, cst.Name)
                and node.targets[0].target.value.value == "self"
                and node.targets[0].target.attr.value == func.attr.value
            ):
                if found is not None or not isinstance(node.value, cst.Call):
                    return None  # assigned twice, or not a constructor: unknown
                found = node.value
        return found
    return None


def _walk(root: cst.CSTNode):
    from ..shared.matchers import walk

    return walk(root)


def _loss_call(ctx: FileContext, bindings: Bindings, call: cst.Call) -> _Loss | None:
    qualified = ctx.qualify(call.func) or ""
    prefix = "torch.nn.functional."
    if qualified.startswith(prefix):
        name = qualified[len(prefix) :]
        if name in _CLASS_LOSSES or name in _ELEMENTWISE_LOSSES:
            return _Loss(call, name, None, None)
        return None
    ctor = _constructor(ctx, bindings, call.func)
    if ctor is None:
        return None
    name = _qualified_module(ctx, ctor)
    if name is None:
        return None
    if positional(ctor):
        return None  # positional constructor arguments (weight, size_average...): unclear
    module = call.func if not isinstance(call.func, cst.Call) else None
    if module is None:
        return None  # `nn.MSELoss()(a, b)`: rare; the module is rebuilt every call anyway
    return _Loss(call, name, module, ctor)


def _arguments(call: cst.Call) -> tuple[cst.Arg, cst.Arg] | None:
    """(input, target) of a loss call, positional or by keyword; None when there are more
    positional arguments (weight passed positionally...)."""
    args = positional(call)
    if len(args) > 2 or any(a.star for a in call.args):
        return None
    first = args[0] if args else keyword(call, "input")
    second = args[1] if len(args) > 1 else keyword(call, "target")
    if first is None or second is None:
        return None
    return first, second


def _string(arg: cst.Arg | None) -> str | None:
    if arg is None:
        return None
    value = arg.value
    if isinstance(value, cst.SimpleString) and isinstance(value.evaluated_value, str):
        return value.evaluated_value
    return ""  # given, not a literal


def loss_fix(
    ctx: FileContext, bindings: Bindings, leaves: Leaves, region: Region
) -> FixSpec | None:
    """The rewrite of a loss whose input and target are selections by the same mask."""
    if not leaves.like.plain:
        return None
    parent = ctx.parent(region.top)
    if not isinstance(parent, cst.Arg):
        return None
    call = ctx.parent(parent)
    if not isinstance(call, cst.Call):
        return None
    loss = _loss_call(ctx, bindings, call)
    if loss is None:
        return None
    pair = _arguments(call)
    if pair is None or all(arg is not parent for arg in pair):
        return None
    regions: list[Region] = []
    for arg in pair:
        found: dict[int, tuple[cst.CSTNode, cst.BaseExpression]] = {}
        if not operand(leaves, arg.value, found) or not found:
            return None
        regions.append(Region(arg.value, found))
    allowed = _KEPT[loss.name]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value not in (allowed | {"input", "target"}):
            return None
    if loss.ctor is not None:
        for arg in loss.ctor.args:
            if arg.keyword is None or arg.keyword.value not in allowed:
                return None
    reduction = _string(loss.option("reduction"))
    if reduction not in (None, "mean", "sum"):
        return None  # "none" keeps the selection's shape; a computed reduction is unknown
    if leaves.locals and not is_pure(ctx, leaves.like.mask):
        return None  # the mask is evaluated again where the selections were used
    if loss.name in _CLASS_LOSSES:
        return _class_loss(ctx, bindings, loss, pair, regions, leaves)
    return _elementwise_loss(ctx, bindings, loss, regions, leaves, reduction or "mean")


def _class_loss(
    ctx: FileContext,
    bindings: Bindings,
    loss: _Loss,
    pair: tuple[cst.Arg, cst.Arg],
    regions: list[Region],
    leaves: Leaves,
) -> FixSpec | None:
    inputs, targets = regions
    mask = leaves.like.mask
    torch_name, needs_import = torch_alias(ctx)
    ignore = loss.option("ignore_index")
    if ignore is None:
        ignore_code = "-100"
    elif loss.module is not None and not _literal(ignore.value):
        ignore_code = f"{atom(ctx, loss.module)}.ignore_index"
    else:
        ignore_code = bare(ctx, ignore.value)
    # The targets are class indices: `y[m]` is (N,), so `y` has the mask's shape and the mask
    # needs no widening; `z[m]` is (N, C), so the classes are `z`'s last dimension.
    new_target = f"{torch_name}.where({bare(ctx, mask)}, {unselected(ctx, targets)}, {ignore_code})"
    new_input = _classes_first(ctx, bindings, inputs)
    input_arg, target_arg = pair
    replaced = loss.call.with_changes(
        args=[
            a.with_changes(value=expression(new_input))
            if a is input_arg
            else a.with_changes(value=expression(new_target))
            if a is target_arg
            else a
            for a in loss.call.args
        ]
    )
    what = "cross-entropy" if loss.name == "cross_entropy" else "NLL loss"
    return FixSpec(
        Applicability.UNSAFE,
        f"Compute the {what} on every row and ignore the unselected targets (assumes "
        f"`{bare(ctx, mask).strip()}` is a bool mask; the targets are class indices; the "
        "inputs are finite where the mask is false)",
        [(loss.call, replaced)],
        add_imports=(ImportSpec("torch"),) if needs_import else (),
    )


def _literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation):
        return _literal(node.expression)
    return isinstance(node, (cst.Integer, cst.Float))


def _classes_first(ctx: FileContext, bindings: Bindings, inputs: Region) -> str:
    """The unselected input with its class dimension where the loss wants it (dimension 1):
    `z.permute(0, 2, 3, 1)[m]` undoes the permute; `z[m]` of a flattened `z` is already
    (rows, classes); otherwise the last dimension is moved to dimension 1 (a no-op for a
    two-dimensional `z`)."""
    if inputs.simple:
        base = inputs.bases[0]
        undone = _undo_channels_last(ctx, base)
        if undone is not None:
            return undone
        if _two_dimensional(ctx, bindings, base):
            return bare(ctx, base)
    return f"{atom(ctx, cst.parse_expression(unselected(ctx, inputs)))}.movedim(-1, 1)"


def _undo_channels_last(ctx: FileContext, base: cst.BaseExpression) -> str | None:
    """`z` for `z.permute(0, 2, ..., k, 1)` (classes moved last), else None."""
    if not (
        isinstance(base, cst.Call)
        and isinstance(base.func, cst.Attribute)
        and base.func.attr.value == "permute"
        and all(a.keyword is None for a in base.args)
    ):
        return None
    order: list[int] = []
    for arg in base.args:
        if not isinstance(arg.value, cst.Integer):
            return None
        order.append(int(arg.value.value))
    n = len(order)
    if n < 3 or order != [0, *range(2, n), 1]:
        return None
    return atom(ctx, base.func.value)


def _two_dimensional(ctx: FileContext, bindings: Bindings, node: cst.BaseExpression) -> bool:
    """`x.view(-1, c)`, `x.reshape(-1, c)`, `x.flatten(0, -2)`, `torch.flatten(x, 0, -2)`
    (or a local bound to one): rows by classes."""
    if isinstance(node, cst.Name):
        binding = bindings.lookup(node.value)
        if binding is None or binding.value is None or binding.unpack_index is not None:
            return False
        return isinstance(binding.value, cst.Call) and _two_dimensional(
            ctx, bindings, binding.value
        )
    if isinstance(node, cst.Call):
        args = positional(node)
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("view", "reshape"):
            return len(args) == 2 and len(node.args) == 2
        flatten_args = None
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "flatten":
            flatten_args = node.args
        elif ctx.qualify(node.func) == "torch.flatten":
            flatten_args = node.args[1:]
        if flatten_args is not None:
            values = {}
            for position, arg in enumerate(flatten_args):
                name = (
                    arg.keyword.value if arg.keyword else ("start_dim", "end_dim")[min(position, 1)]
                )
                values[name] = ctx.module.code_for_node(arg.value).replace(" ", "")
            return values.get("start_dim", "0") == "0" and values.get("end_dim") == "-2"
    return False


def _elementwise_loss(
    ctx: FileContext,
    bindings: Bindings,
    loss: _Loss,
    regions: list[Region],
    leaves: Leaves,
    reduction: str,
) -> FixSpec | None:
    mask = leaves.like.mask
    bases = [b for r in regions for b in r.bases]
    form = mask_form(ctx, bindings, leaves.like, bases)
    if (reduction == "mean" or form.reads_base_again) and not is_pure(ctx, mask):
        return None
    if form.reads_base_again and not all(is_pure(ctx, b) for b in bases):
        return None
    torch_name, needs_import = torch_alias(ctx)
    functional = _functional_prefix(ctx, torch_name)
    # The loss is now computed outside the mask too. Binary cross-entropy checks that its
    # inputs and targets are in [0, 1] (a target of -1 for "missing" would raise), so its
    # operands are kept valid there with `torch.where(m, t, 1)`; for every loss, operands the
    # mask tests for NaN are (a NaN there would reach the gradients).
    everything = loss.name == "binary_cross_entropy"
    args = [
        unselected(
            ctx,
            r,
            form.where,
            set(r.leaves) if everything else guarded_leaves(ctx, bindings, r, mask),
        )
        for r in regions
    ]
    if loss.module is None:
        for arg in loss.call.args:
            name = arg.keyword.value if arg.keyword else ""
            if name and name not in ("input", "target", "reduction"):
                args.append(f"{name}={bare(ctx, arg.value)}")
    else:
        assert loss.ctor is not None
        for arg in loss.ctor.args:
            name = arg.keyword.value if arg.keyword else ""
            if name == "reduction":
                continue
            if name == "pos_weight" or not _literal(arg.value):
                # A tensor argument of the module: read it from the module itself.
                args.append(f"{name}={atom(ctx, loss.module)}.{name}")
            else:
                args.append(f"{name}={bare(ctx, arg.value)}")
    args.append('reduction="none"')
    unreduced = f"{functional}.{loss.name}({', '.join(args)})"
    text = f"{torch_name}.where({form.where}, {unreduced}, 0).sum()"
    if reduction == "mean":
        text += f" / {form.count}"
    return FixSpec(
        Applicability.UNSAFE,
        f"Compute the loss unreduced and take its masked {reduction} (assumes {form.condition}"
        + ("" if everything else "; the inputs are finite where the mask is false")
        + ")",
        [(loss.call, fits(ctx, loss.call, expression(text)))],
        add_imports=(ImportSpec("torch"),) if needs_import else (),
    )


def _functional_prefix(ctx: FileContext, torch_name: str) -> str:
    """How the file names torch.nn.functional (`F`), else `torch.nn.functional`."""
    for local, target in ctx.aliases.bindings.items():
        if target == "torch.nn.functional":
            return local
    return f"{torch_name}.nn.functional"


__all__ = ["loss_fix"]
