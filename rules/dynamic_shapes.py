"""TPU2xx: dynamic shapes and recompilation."""

from __future__ import annotations

import re

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.project import ClassKind
from tpulint.analysis.values import CPU, DEVICE, ValueKind
from tpulint.diagnostics import Applicability
from tpulint.rule import FixSpec, Invalid, Rule, Valid

from ._common import source_of
from ._rewrites_masked import read_fix, write_fix
from ._rewrites_nonzero import shape_op_fix
from ._shape_helpers import (
    TrackingRule,
    elementwise_mask,
    is_self_attribute,
    is_torch_tensor,
    keyword,
    mask_in_index,
    method_name,
    positional,
    receiver,
    shape_source,
    torch_name,
    value_size,
)

_HEAD = "import lightning as L\nimport torch\n\n\nclass Model(L.LightningModule):\n"
_MOD = "import torch\nfrom torch import nn\n\n\nclass Head(nn.Module):\n"


def _quiet(ctx: FileContext, node: cst.CSTNode) -> bool:
    guards = ctx.guards(node)
    return "rare" in guards or "device-check" in guards


def _maybe_device(kind: ValueKind) -> bool:
    return kind in (DEVICE, ValueKind.UNKNOWN)


# --- TPU201 -----------------------------------------------------------------------------

_SHAPE_OPS = {
    "nonzero": "nonzero",
    "argwhere": "argwhere",
    "unique": "unique",
    "unique_consecutive": "unique_consecutive",
    "masked_select": "masked_select",
}


class DataDependentShapeOp(TrackingRule, Rule):
    """
    ## What it does
    Finds operations whose output shape depends on the values of their input, in code that
    runs every step: `nonzero` (method and `torch.nonzero`), `argwhere`, `unique`,
    `unique_consecutive`, `masked_select`, one-argument `torch.where(cond)`, and
    `repeat_interleave` with a tensor of repeats. Calls on numpy arrays, pandas objects
    and CPU tensors built from Python data (`torch.tensor([...])`) are not reported.

    ## Why is this bad on TPU?
    XLA compiles graphs with static shapes. When the size of a result is only known after
    looking at the data, torch_xla has to execute the graph up to that point and copy the
    values to the host to learn it (a sync), then record and compile a new graph for every
    size that shows up. torch_xla's troubleshooting guide lists `nonzero` and masked
    indexing as the first cause of dynamic shapes.

    ## Example
    ```python
    from torch import nn


    class Loss(nn.Module):
        def forward(self, scores, labels):
            positives = (labels > 0).nonzero()
            return scores[positives[:, 0]].sum()
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn


    class Loss(nn.Module):
        def forward(self, scores, labels):
            return torch.where(labels > 0, scores, 0).sum()
    ```

    Keep shapes static: compute on the whole tensor and mask the result (`torch.where`,
    multiplication by a mask, masked sums and means), or pad to a fixed maximum size
    (`torch.nonzero_static`, `torch.unique(..., sorted=True)` on fixed-size buffers).

    ## Fix safety
    Where the indices are only used to count or to index, an **unsafe** fix keeps the mask
    instead:

    - `len(m.nonzero())`, `m.nonzero().shape[0]`, `torch.nonzero(m).size(0)`,
      `torch.argwhere(m).shape[0]` become `torch.count_nonzero(m)`: the same count, as a
      0-dim tensor instead of an `int` (exact when the count is used as a number);
    - `x[m.nonzero(as_tuple=True)]`, `x[torch.nonzero(m, as_tuple=True)]` and
      `x[torch.where(m)]` become `x[m]` (`x[m != 0]` when `m` is not surely boolean): the
      same elements in the same order, exactly, gradients included;
    - `idx = m.nonzero(as_tuple=True)`, when every later use of `idx` in the function is an
      index `x[idx]`, becomes `idx = m`;
    - `len(torch.unique(y))` (the number of distinct values) becomes
      `(torch.nn.functional.one_hot(y.flatten().long(), num_classes).sum(0) > 0).sum()`
      when the code names the number of classes (a `num_classes` or `n_classes` local or
      parameter, or such an attribute of the class); exact when the values are class
      indices in `[0, num_classes)`.

    The indexing forms are still boolean-mask selections (TPU202), whose reductions and
    losses TPU202's fixes then rewrite into static shapes. `tpulint fix --prove
    module:Class --apply --unsafe-fixes` checks the rewritten training against the
    original before writing it. Other uses (the indices themselves, `unique` values or
    counts kept as tensors, `masked_select`, `repeat_interleave`) are reported without a
    fix: rewriting them changes the shapes that the following code sees.

    ## References
    - [torch_xla troubleshooting: known performance caveats (dynamic shapes)](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [torch_xla: recompilation causes](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)
    - [torch_xla: dynamic shape support (experimental, bounded)](https://github.com/pytorch/xla/blob/master/docs/source/learn/dynamic_shape.md)
    """

    code = "TPU201"
    hot_only = True
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Keep the mask"
    name = "data-dependent-shape-op"
    summary = "`nonzero`, `unique`, `masked_select`, one-argument `where` in hot code"
    requires = ("nonzero", "argwhere", "unique", "masked_select", "where(", "repeat_interleave")

    VALID = (
        # EXAMPLES T8: a CPU tensor of Python ints (static shapes of the inputs).
        Valid(
            _MOD + "    def forward(self, inputs):\n"
            "        sizes = torch.unique_consecutive(\n"
            "            torch.tensor([x.shape[-1] for x in inputs]))\n"
            "        return sizes\n"
        ),
        # pandas / numpy unique in data preparation.
        Valid(
            "import numpy as np\nimport pandas as pd\n"
            + _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            "        df = pd.DataFrame({'a': [1]})\n        cats = df['a'].unique()\n"
            "        ids = np.unique(np.array([1, 2]))\n        return self(batch)\n"
        ),
        Valid(
            _HEAD + "    def setup(self, stage):\n        self.classes = self.targets.unique()\n"
        ),
        # Three-argument where is static.
        Valid(_MOD + "    def forward(self, x):\n        return torch.where(x > 0, x, 0)\n"),
        # Integer repeats are static.
        Valid(_MOD + "    def forward(self, x):\n        return x.repeat_interleave(2, dim=0)\n"),
    )
    INVALID = (
        Invalid(
            _MOD + "    def forward(self, masks):\n"
            "        batch_idx, patch_idx = torch.nonzero(masks, as_tuple=True)\n"
            "        return batch_idx\n",
            line=7,
            message="in forward",
        ),
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        scores = self(batch)\n"
            "        idxs, labels = (scores > 0.5).nonzero().T\n"
            "        for label in torch.unique(labels):\n            pass\n"
            "        kept = scores.masked_select(scores > 0)\n"
            "        pos = torch.where(scores > 0)\n"
            "        return scores\n",
            count=4,
        ),
        Invalid(
            _MOD + "    def forward(self, x, durations):\n"
            "        durations = self.predictor(x).round().long()\n"
            "        return torch.repeat_interleave(x, durations, dim=1)\n",
        ),
        # Counting and indexing keep the mask.
        Invalid(
            _MOD + "    def forward(self, scores, labels, num_classes):\n"
            "        n_pos = len((labels > 0).nonzero())\n"
            "        idx = (labels > 0).nonzero(as_tuple=True)\n"
            "        present = len(torch.unique(labels))\n"
            "        return scores[idx].sum() / n_pos / present\n",
            count=3,
            applicability=Applicability.UNSAFE,
            expected_fix=_MOD + "    def forward(self, scores, labels, num_classes):\n"
            "        n_pos = torch.count_nonzero(labels > 0)\n"
            "        idx = labels > 0\n"
            "        present = (torch.nn.functional.one_hot(labels.flatten().long(), "
            "num_classes).sum(0) > 0).sum()\n"
            "        return scores[idx].sum() / n_pos / present\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        name = torch_name(ctx, node)
        method = None
        if name is not None:
            op = name.rsplit(".", 1)[-1]
            args = positional(node)
            subject = args[0].value if args else None
        else:
            method = method_name(node)
            if method is None:
                return
            op = method
            subject = receiver(node)
            args = positional(node)
        if subject is None:
            return
        kind = ctx.value_kind(subject)
        if kind.is_host or kind is CPU or not _maybe_device(kind):
            return
        if op in _SHAPE_OPS:
            if (
                method is not None
                and kind is not DEVICE
                and not is_torch_tensor(ctx, subject, self.bindings)
                and op in ("unique", "unique_consecutive")
            ):
                return  # `df["a"].unique()`: not known to be a tensor
            self._report(node, op)
        elif op == "where" and name is not None and len(node.args) == 1:
            self._report(node, "where")
        elif op == "repeat_interleave":
            repeats = (
                keyword(node, "repeats")
                or (args[1] if name is not None and len(args) > 1 else None)
                or (args[0] if method is not None and args else None)
            )
            if name is not None and len(args) == 1 and keyword(node, "repeats") is None:
                repeats = args[0]  # torch.repeat_interleave(repeats)
            if repeats is None:
                return
            value = repeats.value
            if ctx.value_kind(value) is DEVICE or (
                ctx.value_kind(value) is ValueKind.UNKNOWN
                and is_torch_tensor(ctx, value, self.bindings)
            ):
                self._report(node, "repeat_interleave")

    def _report(self, node: cst.Call, op: str) -> None:
        ctx = self.ctx
        if _quiet(ctx, node):
            return
        advice = {
            "nonzero": "use masks (`torch.where`, multiplying by a mask) or `nonzero_static`",
            "argwhere": "use masks (`torch.where`) or `torch.nonzero_static`",
            "unique": "use a fixed-size encoding (one-hot counts, `scatter_add` over all classes)",
            "unique_consecutive": "use a fixed-size encoding over all possible values",
            "masked_select": "use `torch.where(mask, x, 0)` and masked reductions",
            "where": "use the three-argument `torch.where(cond, x, y)`",
            "repeat_interleave": "expand to a fixed maximum length and mask",
        }[op]
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {ctx.hot_reason} has a data-dependent output shape: "
            f"XLA syncs to learn it and compiles a graph per size; {advice}",
            fix=shape_op_fix(ctx, self.bindings, node, op),
        )


# --- TPU202 -----------------------------------------------------------------------------


class BooleanMaskIndexing(TrackingRule, Rule):
    """
    ## What it does
    Finds indexing with a boolean mask in code that runs every step: reads such as
    `x[mask]`, `x[x > 0]`, `x[~m]`, `x[:, keep]` and writes such as `x[mask] = v`. An
    index is a mask when it is a comparison of tensors, `~m`, `&` / `|` of masks,
    `.bool()`, `torch.isnan` / `isfinite` / `logical_*`, a local bound to one of those, or
    a name that says so (`mask`, `loss_mask`, `keep`, `valid`, `is_target`). Integer index
    tensors (`argsort`, `arange`, `topk` indices, `.long()`), slices, `None`, numbers and
    `...` are not masks.

    ## Why is this bad on TPU?
    `x[mask]` has one element per true entry, so its shape depends on the data. torch_xla
    implements it with `nonzero`: the graph is executed up to the mask and the mask is
    copied to the host to learn the size (a sync), and every different count compiles a
    new graph. Masked reductions and `torch.where` keep every shape static.

    ## Example
    ```python
    from torch import nn


    class MaskedL1(nn.Module):
        def forward(self, pred, target):
            valid = target >= 0
            return (pred[valid] - target[valid]).abs().mean()
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn


    class MaskedL1(nn.Module):
        def forward(self, pred, target):
            valid = target >= 0
            error = torch.where(valid, (pred - target).abs(), 0)
            return error.sum() / valid.sum()
    ```

    ## Fix safety
    Sums and means of `x[m]` whose mask is provably elementwise of `x` (`x[x > 0]`, a local
    `m = ~torch.isnan(x)`) and writes `x[m] = <number>` under the same condition are **safe**
    fixes, applied by `tpulint fix --apply`: the values are the same up to floating-point
    summation order, the mean of an empty selection is `nan` in both forms, and gradients
    are the same (`torch.where` passes the gradient to the selected elements only).

    Every other rewrite is **unsafe** (`--unsafe-fixes`): it is exact under the conditions
    listed below, which the fix's title repeats. `tpulint fix --prove module:Class --apply
    --unsafe-fixes` checks them by training the module as written and as rewritten from the
    same seed on the same batches, and applies only the rewrites that keep the training
    the same (`tpulint verify --compare` reports the same check).

    - `x[m].sum()`, `torch.sum(x[m])` -> `torch.where(m, x, 0).sum()`: exact.
    - `x[m].mean()`, `torch.mean(x[m])` -> `torch.where(m, x, 0).sum() / m.sum()`: exact for
      a floating-point `x` (the original raises on integers); an empty selection gives
      `nan` in both.
    - `x[m].max()`, `.min()`, `.amax()`, `.amin()` -> `torch.where(m, x, -torch.inf).max()`
      (`torch.inf` for the minimum): exact when the selection is not empty (the original
      raises, the rewrite gives `-inf` / `inf`); an integer `x` gives a float.
    - `x[m].numel()`, `len(x[m])`, `x[m].shape[0]`, `x[m].size(0)` -> `m.sum()`: the same
      count, as a 0-dim tensor instead of an `int` (exact where it is used as a number).
    - an elementwise expression of selections, reduced, `(a[m] - b[m]).abs().mean()` ->
      `torch.where(m, (a - b).abs(), 0).sum() / m.sum()`. The expression is now computed
      where `m` is false too, and a `nan` or an infinity there would reach the gradients, so
      operands in a divisor, a logarithm, a root or a reciprocal, and operands the mask
      tests for NaN (`t[~torch.isnan(t)]`), are masked first: `a[m] / c[m]` becomes
      `a / torch.where(m, c, 1)`. Exact when the other operands are finite where `m` is
      false.
    - `F.cross_entropy(z[m], y[m])`, `F.nll_loss(...)` and `nn.CrossEntropyLoss` /
      `nn.NLLLoss` modules -> `F.cross_entropy(z.movedim(-1, 1), torch.where(m, y, -100))`
      (for `z.permute(0, 2, 3, 1)[m]`, `z` itself; an `ignore_index` already given replaces
      `-100`): exact when `y` holds class indices and `z` is finite where `m` is false, with
      `reduction` `"mean"` or `"sum"`; `weight` and `label_smoothing` are kept (ignored
      targets count for neither).
    - `F.mse_loss(p[m], t[m])`, `l1_loss`, `smooth_l1_loss`, `huber_loss`,
      `binary_cross_entropy`, `binary_cross_entropy_with_logits` and their `nn.*Loss`
      modules -> `torch.where(m, F.mse_loss(p, t, reduction="none"), 0).sum() / m.sum()`
      (no division for `reduction="sum"`): exact when `p` and `t` are finite where `m` is
      false; not offered with a `weight` argument (`pos_weight`, `beta`, `delta` are kept).
      Binary cross-entropy checks that its inputs are in [0, 1], so there both are first
      kept valid outside the mask (`torch.where(m, t, 1)`: a target of -1 meaning "no
      label" would raise).
    - selections bound to locals whose every later use (in the same block) is one of the
      above: `y_pred = y_pred[m]; y_true = y_true[m]; loss = F.mse_loss(y_pred, y_true)`
      -> the two selections are removed and the loss computed on the whole tensors. The
      mask and the selected tensors are read again at the uses, so no other statement may
      rebind them in between.
    - `x[m] = v`, `v` a number or a name holding one -> `x.masked_fill_(m, v)`: exact when
      `v` is a number or a 0-dim tensor.
    - `x[m] = f(y[m], ...)` -> `x.copy_(torch.where(m, f(y, ...), x))`, with the same
      masking of divisors and NaN-tested operands: exact when the other operands are finite
      where `m` is false.

    Full slices around the mask are kept track of: `x[m, :]` is `x[m]`, `x[:, m]` widens
    the mask after the first dimension, `x[..., m]` matches it with the last dimensions
    (where `torch.where` broadcasts it anyway).

    Every rewrite assumes that `m` is a `torch.bool` tensor (a `uint8` mask, deprecated for
    indexing, makes `torch.where` and `masked_fill_` raise) and that the selected values
    are torch tensors (not numpy arrays). Indexing matches the mask with the leading
    dimensions of `x`, while `torch.where` and `masked_fill_` broadcast it from the
    trailing ones: where `m` is not provably of `x`'s shape (the same shape, or computed
    elementwise from `x`, or from another tensor selected by it), the rewrite widens it,
    `m.reshape(m.shape + (1,) * (x.dim() - m.dim()))`, and counts selected elements as
    `m.sum() * (x.numel() // m.numel())`, which is exact for every mask indexing accepts.
    For cross-entropy the targets fix the shapes (`y[m]` has one entry per row of `z[m]`),
    so the mask needs no widening there.

    Other uses of `x[m]` (the selected rows are kept, concatenated, passed to a module or a
    metric) have no static-shape equivalent without changing the code that follows them:
    they are reported without a fix.

    ## References
    - [torch_xla troubleshooting: "masked indexing `base[index]`" introduces dynamic shapes](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [torch_xla: recompilation causes](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)
    - [PyTorch: `Tensor.masked_fill_`](https://pytorch.org/docs/stable/generated/torch.Tensor.masked_fill_.html)
    - [PyTorch: `torch.where`](https://pytorch.org/docs/stable/generated/torch.where.html)
    """

    code = "TPU202"
    hot_only = True
    name = "boolean-mask-indexing"
    summary = "Indexing with a boolean mask (`x[mask]`, `x[x > 0]`, `x[m] = v`) in hot code"
    fix_applicability = Applicability.SAFE
    fix_sometimes = True
    fix_message = "Use a static-shape masked form"
    requires = ("[",)

    VALID = (
        # Integer indices, slices, None, numbers and ellipsis are static.
        Valid(
            _MOD + "    def forward(self, x, lengths):\n"
            "        order = lengths.argsort(descending=True)\n"
            "        idx = torch.arange(4)\n"
            "        y = x[order][:, None, ..., 0][idx][1:3]\n"
            "        keep = torch.topk(x, 3).indices\n"
            "        return y + x[keep]\n"
        ),
        # Not hot: __init__ and epoch-level hooks.
        Valid(
            _HEAD + "    def on_validation_epoch_end(self):\n"
            "        preds = self.preds[self.preds > 0]\n"
        ),
        # numpy arrays and Python lists.
        Valid(
            "import numpy as np\n" + _MOD + "    def forward(self, x):\n"
            "        arr = np.arange(10)\n        sel = arr[arr > 3]\n"
            "        return x * len(sel)\n"
        ),
        # Names that are not masks.
        Valid(
            _MOD + "    def forward(self, x, mask_idx, valid_indices):\n"
            "        return x[mask_idx] + x[valid_indices]\n"
        ),
        # Under a device check or a rare guard.
        Valid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        x = self(batch)\n"
            "        if batch_idx == 0:\n            self.first = x[x > 0]\n"
        ),
    )
    INVALID = (
        # Real shapes from the corpus (EXAMPLES §2).
        Invalid(
            _MOD + "    def forward(self, pred, target):\n"
            "        normal_scores = pred[target == 0]\n"
            "        anomalous_scores = pred[target > 0]\n"
            "        return normal_scores.mean() + anomalous_scores.mean()\n",
            count=2,
            line=7,
            message="in forward",
        ),
        Invalid(
            _MOD + "    def forward(self, logits, labels, loss_mask=None):\n"
            "        logits_flatten = torch.flatten(logits, start_dim=0, end_dim=-2)\n"
            "        if loss_mask is not None:\n"
            "            if loss_mask.dtype is not torch.bool:\n"
            "                loss_mask = loss_mask > 0.5\n"
            "            loss_mask_flatten = torch.flatten(loss_mask, start_dim=0, end_dim=-1)\n"
            "            logits_flatten = logits_flatten[loss_mask_flatten]\n"
            "        return logits_flatten\n",
        ),
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        target, waveform = batch\n"
            "        num_speakers = torch.sum(torch.any(target, dim=1), dim=1)\n"
            "        keep = num_speakers <= 3\n"
            "        target = target[keep]\n"
            "        logits_00 = self(waveform)[~keep]\n"
            "        return target\n",
            count=2,
        ),
        # Safe: the mask is elementwise of x.
        Invalid(
            _MOD + "    def forward(self, x):\n"
            "        x[x < 0] = 0\n"
            "        x[torch.isnan(x)] = -1e9\n"
            "        return x\n",
            count=2,
            applicability=Applicability.SAFE,
            expected_fix=_MOD + "    def forward(self, x):\n"
            "        x.masked_fill_(x < 0, 0)\n"
            "        x.masked_fill_(torch.isnan(x), -1e9)\n"
            "        return x\n",
        ),
        Invalid(
            "from torch import nn\n\n\nclass Loss(nn.Module):\n"
            "    def forward(self, x):\n"
            "        hard = x >= 0.5\n"
            "        return x[hard].mean() + x[x > 0].sum()\n",
            count=2,
            applicability=Applicability.SAFE,
            expected_fix="from torch import nn\nimport torch\n\n\nclass Loss(nn.Module):\n"
            "    def forward(self, x):\n"
            "        hard = x >= 0.5\n"
            "        return (torch.where(hard, x, 0).sum() / hard.sum()) + "
            "torch.where(x > 0, x, 0).sum()\n",
        ),
        # Unsafe: a masked mean of a per-sample loss (the mask and the loss both have the
        # labels' shape).
        Invalid(
            _HEAD.replace("import torch\n", "import torch\nimport torch.nn.functional as F\n")
            + "    def training_step(self, batch, batch_idx):\n"
            "        images, labels = batch\n"
            "        labeled = labels >= 0\n"
            "        loss = F.cross_entropy(self(images), labels.clamp(min=0), reduction='none')\n"
            "        return loss[labeled].mean()\n",
            applicability=Applicability.UNSAFE,
            message="selects by the boolean mask `labeled`",
            expected_fix=_HEAD.replace(
                "import torch\n", "import torch\nimport torch.nn.functional as F\n"
            )
            + "    def training_step(self, batch, batch_idx):\n"
            "        images, labels = batch\n"
            "        labeled = labels >= 0\n"
            "        loss = F.cross_entropy(self(images), labels.clamp(min=0), reduction='none')\n"
            "        return torch.where(labeled, loss, 0).sum() / labeled.sum()\n",
        ),
        # Masked losses: cross-entropy through ignore_index (classes moved back to dim 1),
        # an elementwise module loss unreduced and averaged over the mask.
        Invalid(
            "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
            "class Seg(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.depth_loss = nn.SmoothL1Loss(beta=0.5)\n\n"
            "    def forward(self, logits, labels, depth, target):\n"
            "        valid = labels != 255\n"
            "        ce = F.cross_entropy(logits.permute(0, 2, 3, 1)[valid], labels[valid])\n"
            "        near = target < 10\n"
            "        return ce + self.depth_loss(depth[near], target[near])\n",
            count=2,  # one finding per mask and line, naming both selections
            line=13,
            applicability=Applicability.UNSAFE,
            expected_fix="import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
            "class Seg(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.depth_loss = nn.SmoothL1Loss(beta=0.5)\n\n"
            "    def forward(self, logits, labels, depth, target):\n"
            "        valid = labels != 255\n"
            "        ce = F.cross_entropy(logits, torch.where(valid, labels, -100))\n"
            "        near = target < 10\n"
            "        return ce + (torch.where(near, F.smooth_l1_loss(depth, target, beta=0.5, "
            'reduction="none"), 0).sum() / near.sum())\n',
        ),
        # A loss module with its own ignore_index, on flattened rows.
        Invalid(
            _MOD.replace("class Head", "class Tokens") + "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.ce = nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)\n\n"
            "    def forward(self, logits, tokens, loss_mask):\n"
            "        rows = logits.view(-1, logits.size(-1))\n"
            "        keep = loss_mask.view(-1).bool()\n"
            "        return self.ce(rows[keep], tokens.view(-1)[keep])\n",
            count=1,
            applicability=Applicability.UNSAFE,
            expected_fix=_MOD.replace("class Head", "class Tokens") + "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.ce = nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)\n\n"
            "    def forward(self, logits, tokens, loss_mask):\n"
            "        rows = logits.view(-1, logits.size(-1))\n"
            "        keep = loss_mask.view(-1).bool()\n"
            "        return self.ce(rows, torch.where(keep, tokens.view(-1), 0))\n",
        ),
        # Max, counts, and a mask of unknown shape (widened over x's trailing dimensions).
        Invalid(
            _MOD + "    def forward(self, scores, valid, d, mask):\n"
            "        top = scores[scores > 0].max()\n"
            "        n = len(scores[valid])\n"
            "        d[mask] = 0.0\n"
            "        return top / n + torch.mean(d[mask])\n",
            count=4,
            applicability=Applicability.UNSAFE,
            expected_fix=_MOD + "    def forward(self, scores, valid, d, mask):\n"
            "        top = torch.where(scores > 0, scores, -torch.inf).max()\n"
            "        n = valid.sum()\n"
            "        d.masked_fill_(mask.reshape(mask.shape + (1,) * (d.dim() - mask.dim())), "
            "0.0)\n"
            "        return top / n + (torch.where(mask.reshape(mask.shape + (1,) * (d.dim() - "
            "mask.dim())), d, 0).sum() / (mask.sum() * (d.numel() // mask.numel())))\n",
        ),
        # A write of an elementwise expression of selections.
        Invalid(
            _MOD + "    def forward(self, hist, mag, counts):\n"
            "        seen = counts > 0\n"
            "        hist[seen] = mag[seen] / counts[seen]\n"
            "        return hist\n",
            count=2,  # the write, and one finding for both reads
            applicability=Applicability.UNSAFE,
            expected_fix=_MOD + "    def forward(self, hist, mag, counts):\n"
            "        seen = counts > 0\n"
            "        hist.copy_(torch.where(seen, mag / torch.where(seen, counts, 1), hist))\n"
            "        return hist\n",
        ),
        # Selections bound to locals, then a loss of them: the selections go.
        Invalid(
            _HEAD.replace("import torch\n", "import torch\nimport torch.nn.functional as F\n")
            + "    def training_step(self, batch, batch_idx):\n"
            "        y_pred = self(batch['X'])\n"
            "        y_true = batch['y']\n"
            "        labeled = y_true != -1\n"
            "        y_pred = y_pred[labeled]\n"
            "        y_true = y_true[labeled]\n"
            "        return F.mse_loss(y_pred, y_true)\n",
            count=2,
            applicability=Applicability.UNSAFE,
            expected_fix=_HEAD.replace(
                "import torch\n", "import torch\nimport torch.nn.functional as F\n"
            )
            + "    def training_step(self, batch, batch_idx):\n"
            "        y_pred = self(batch['X'])\n"
            "        y_true = batch['y']\n"
            "        labeled = y_true != -1\n"
            '        return torch.where(labeled, F.mse_loss(y_pred, y_true, reduction="none"), '
            "0).sum() / labeled.sum()\n",
        ),
        # forward's unannotated parameters are tensors, and the mask is elementwise of
        # `result`: safe.
        Invalid(
            _MOD + "    def forward(self, a, b):\n"
            "        result = a / b\n"
            "        result[result != result] = 0.0\n"
            "        return result\n",
            applicability=Applicability.SAFE,
            expected_fix=_MOD + "    def forward(self, a, b):\n"
            "        result = a / b\n"
            "        result.masked_fill_(result != result, 0.0)\n"
            "        return result\n",
        ),
        # A helper's untyped parameters may be numpy arrays (darts' `_divide_no_nan`, hot
        # because `forward` calls it): unsafe, and the title says what it assumes.
        Invalid(
            "import torch\nfrom torch import nn\n\n\ndef _divide_no_nan(a, b):\n"
            "    result = a / b\n"
            "    result[result != result] = 0.0\n"
            "    return result\n\n\n"
            "class Loss(nn.Module):\n"
            "    def forward(self, x, y):\n"
            "        return torch.mean(_divide_no_nan(x, y))\n",
            applicability=Applicability.UNSAFE,
            message="called from forward",
            expected_fix="import torch\nfrom torch import nn\n\n\n"
            "def _divide_no_nan(a, b):\n"
            "    result = a / b\n"
            "    result.masked_fill_(result != result, 0.0)\n"
            "    return result\n\n\n"
            "class Loss(nn.Module):\n"
            "    def forward(self, x, y):\n"
            "        return torch.mean(_divide_no_nan(x, y))\n",
        ),
        # The selection itself is used: no static-shape equivalent, no fix.
        Invalid(
            _MOD + "    def forward(self, feats, keep):\n"
            "        kept = feats[keep]\n"
            "        return self.proj(kept)\n",
        ),
    )

    def visit_Subscript(self, node: cst.Subscript) -> None:
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        found = mask_in_index(ctx, node, self.bindings)
        if found is None:
            return
        mask, _reason = found
        base = node.value
        kind = ctx.value_kind(base)
        if not _maybe_device(kind):
            return
        if isinstance(base, (cst.List, cst.Tuple, cst.Dict)):
            return
        if _quiet(ctx, node):
            return
        single = len(node.slice) == 1
        parent = ctx.parent(node)
        if isinstance(parent, cst.AssignTarget):
            self._write(node, mask, base, single)
        elif isinstance(parent, cst.AugAssign) and parent.target is node:
            self._report(node, mask, base, "write", None)
        else:
            self._read(node, mask, base, single)

    def _write(
        self, node: cst.Subscript, mask: cst.BaseExpression, base: cst.BaseExpression, single: bool
    ) -> None:
        proven = single and self._provably_same_shape(mask, base)
        fix = write_fix(self.ctx, self.bindings, node, mask, proven=proven)
        self._report(node, mask, base, "write", fix)

    def _read(
        self, node: cst.Subscript, mask: cst.BaseExpression, base: cst.BaseExpression, single: bool
    ) -> None:
        proven = single and self._provably_same_shape(mask, base)
        fix = read_fix(self.ctx, self.bindings, node, mask, proven=proven)
        self._report(node, mask, base, "read", fix)

    def _provably_same_shape(self, mask: cst.BaseExpression, base: cst.BaseExpression) -> bool:
        """The condition for the safe rewrites: `base` is surely a torch tensor (numpy
        arrays have no `masked_fill_`) and `mask` is elementwise of it."""
        bindings = self.bindings
        return is_torch_tensor(self.ctx, base, bindings) and elementwise_mask(
            self.ctx, mask, base, bindings
        )

    def _report(
        self,
        node: cst.Subscript,
        mask: cst.BaseExpression,
        base: cst.BaseExpression,
        what: str,
        fix: FixSpec | None,
    ) -> None:
        ctx = self.ctx
        mask_code = source_of(ctx, mask, 30)
        statement = ctx.enclosing_statement(node)
        key = (id(statement), mask_code, what)
        merged: dict[tuple[int, str, str], tuple[int, list[str], list[str]]] = getattr(
            self, "_merged", {}
        )
        self._merged = merged
        previous = merged.get(key)
        if previous is not None:
            index, subscripts, bases = previous
            report = self.reports[index]
            if (report.fix is None) == (fix is None) and (
                fix is None or report.fix.applicability is fix.applicability  # type: ignore[union-attr]
            ):
                # The same mask indexes several tensors on one line: one finding names all.
                subscripts.append(source_of(ctx, node))
                bases.append(source_of(ctx, base, 30))
                if fix is not None and report.fix is not None:
                    # A rewrite of the whole expression (a masked loss over `z[m]` and
                    # `y[m]`) is the same replacement for both subscripts: once.
                    taken = {id(old) for old, _ in report.fix.replacements}
                    report.fix.replacements.extend(
                        r for r in fix.replacements if id(r[0]) not in taken
                    )
                    report.fix.add_imports = tuple(
                        dict.fromkeys((*report.fix.add_imports, *fix.add_imports))
                    )
                    report.fix.remove_unused_imports = tuple(
                        dict.fromkeys(
                            (*report.fix.remove_unused_imports, *fix.remove_unused_imports)
                        )
                    )
                report.message = self._message(subscripts, bases, mask_code, what, report.fix)
                return
        self.report(
            node,
            self._message([source_of(ctx, node)], [source_of(ctx, base, 30)], mask_code, what, fix),
            fix=fix,
        )
        if fix is not None and fix.applicability is Applicability.DISPLAY_ONLY:
            # The unsafe rewrites widen a mask of unproven shape themselves.
            fix.message += _BROADCAST_NOTE.format(mask=mask_code)
        merged[key] = (len(self.reports) - 1, [source_of(ctx, node)], [source_of(ctx, base, 30)])

    def _message(
        self,
        subscripts: list[str],
        bases: list[str],
        mask_code: str,
        what: str,
        fix: FixSpec | None,
    ) -> str:
        ctx = self.ctx
        names = " and ".join(f"`{s}`" for s in subscripts)
        if what == "write":
            return (
                f"{names} in {ctx.hot_reason} writes through a boolean mask, which indexing "
                "turns into the mask's `nonzero`: a sync to count it and a graph per count; "
                f"use `{bases[0]}.masked_fill_({mask_code}, v)` or `torch.where`"
            )
        several = len(subscripts) > 1
        where = ", ".join(f"`torch.where({mask_code}, {b}, 0)`" for b in dict.fromkeys(bases))
        same = fix is not None and fix.applicability is Applicability.SAFE
        simple = mask_code.replace(".", "").replace("_", "").isalnum()
        wrapped = mask_code if simple else f"({mask_code})"
        note = (
            "" if same else f" (`{wrapped}[..., None]` if the mask covers only leading dimensions)"
        )
        return (
            f"{names} in {ctx.hot_reason} select{'' if several else 's'} by the boolean mask "
            f"`{mask_code}`: the size depends on the mask's values, so XLA syncs to learn it "
            f"and compiles a graph per count; use {where}{note} with masked sums and means"
        )


_BROADCAST_NOTE = (
    " (check that `{mask}` has the shape of the indexed tensor: a mask over its leading "
    "dimensions only must be broadcast, `{mask}[..., None]`)"
)


# --- TPU203 -----------------------------------------------------------------------------


# Loop bounds named after dimensions fixed by the model (codebooks, channels, heads,
# experts, layers), not by the data.
_STRUCTURAL_DIM = re.compile(
    r"^([CDHEKQ]|d|n_?q|.*codebooks?.*|.*channels?|.*heads?|.*experts?|.*layers?|.*groups?|"
    r".*dims?|.*features?)$",
    re.IGNORECASE,
)


class ShapeDependentLoop(TrackingRule, Rule):
    """
    ## What it does
    Finds Python loops whose trip count is a dimension of a tensor computed in the step:
    `for i in range(x.size(0))`, `range(len(x))`, `range(x.shape[1])`, or a name bound
    to one (`B, T, _ = x.shape` ... `range(T)`), in code that runs every step. Loops over
    Python lists and `nn.ModuleList`s (`for layer in self.layers`,
    `range(len(self.layers))`) and over the shape of module state (buffers, parameters)
    are static and are not reported.

    ## Why is this bad on TPU?
    XLA traces Python loops: every iteration is unrolled into the graph. A loop over the
    batch or the sequence length makes the graph grow with that size, compiles slowly, and
    any change of the size (a shorter last batch, a different sequence length) gives a new
    graph and a new compilation. Per-element Python loops also stop XLA from fusing the
    work into a few large operations.

    ## Example
    ```python
    from torch import nn


    class Pool(nn.Module):
        def forward(self, x):
            out = []
            for i in range(x.size(0)):
                out.append(x[i].max(dim=0).values)
            return out
    ```

    ## Use instead
    ```python
    from torch import nn


    class Pool(nn.Module):
        def forward(self, x):
            return x.max(dim=1).values
    ```

    ## Fix safety
    No automatic fix: vectorising a loop is a rewrite of the algorithm.

    ## References
    - [torch_xla troubleshooting: "loops with a different number of iterations"](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [Hugging Face Accelerate: training on TPUs (no for loops of varying length)](https://huggingface.co/docs/accelerate/basic_tutorials/tpu)
    """

    code = "TPU203"
    hot_only = True
    name = "shape-dependent-loop"
    summary = "`for i in range(t.size(0))` / `range(len(t))` over a tensor in hot code"
    requires = ("range(",)

    VALID = (
        # As many iterations as the model has sub-modules (neuralforecast TimeMixer shape).
        Valid(
            _MOD + "    def forward(self, trend_list, codes):\n"
            "        trends = trend_list.copy()\n"
            "        out = trends[0]\n"
            "        for i in range(len(trends) - 1):\n"
            "            out = out + self.up_sampling_layers[i](out)\n"
            "        for c in range(codes.size(1)):\n"
            "            out = out + self.projections[c](codes[:, c])\n"
            "        return out\n"
        ),
        Valid(
            _MOD + "    def forward(self, x):\n"
            "        for layer in self.layers:\n            x = layer(x)\n"
            "        for i in range(len(self.layers)):\n            x = self.layers[i](x)\n"
            "        for j in range(self.weight.size(0)):\n            pass\n"
            "        for k in range(4):\n            pass\n"
            "        return x\n"
        ),
        Valid(
            _HEAD + "    def on_validation_epoch_end(self):\n"
            "        for i in range(len(self.outputs)):\n            pass\n"
        ),
        # A Python list built in the step.
        Valid(
            _MOD + "    def forward(self, x, texts):\n"
            "        tokens = [t.split() for t in texts]\n"
            "        for i in range(len(tokens)):\n            pass\n        return x\n"
        ),
    )
    INVALID = (
        Invalid(
            _MOD + "    def forward(self, x):\n"
            "        out = []\n        for i in range(x.size(0)):\n"
            "            out.append(x[i].sum())\n        return out\n",
            line=8,
            message="in forward",
        ),
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        B, T, C = batch.shape\n        h = self(batch)\n"
            "        for t in range(1, T):\n            h = h + batch[:, t]\n"
            "        for b in range(len(h)):\n            pass\n"
            "        return h\n",
            count=2,
        ),
    )

    def visit_For(self, node: cst.For) -> None:
        super().visit_For(node)
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        iterator = node.iter
        if not (
            isinstance(iterator, cst.Call)
            and isinstance(iterator.func, cst.Name)
            and iterator.func.value == "range"
            and "range" not in ctx.aliases.bindings
        ):
            return
        args = positional(iterator)
        if not args:
            return
        stop = args[1].value if len(args) > 1 else args[0].value
        if isinstance(stop, cst.Name) and _STRUCTURAL_DIM.match(stop.value):
            return  # `for c in range(C)` over codebooks, channels, heads: fixed by the model
        tensor = shape_source(ctx, stop, self.bindings)
        if tensor is None or is_self_attribute(tensor):
            return
        if _indexes_modules(ctx, node):
            return  # `self.layers[i]` for each i: as many iterations as the model has modules
        kind = ctx.value_kind(tensor)
        if kind is not DEVICE and not is_torch_tensor(ctx, tensor, self.bindings):
            return
        if kind.is_host or kind is CPU or _quiet(ctx, node):
            return
        self.report(
            iterator,
            f"`for ... in {source_of(ctx, iterator)}` in {ctx.hot_reason} unrolls one copy of "
            f"the loop body per element of `{source_of(ctx, tensor, 30)}` into the XLA graph, "
            "and recompiles when that size changes; vectorise the loop",
        )


def _indexes_modules(ctx: FileContext, loop: cst.For) -> bool:
    """Whether the loop's body indexes a container of sub-modules (or calls an element of a
    container on `self`) with its variable (`self.up_sampling_layers[i](x)`,
    `self.heads[k + 1]`): the count is the model's."""
    if not isinstance(loop.target, cst.Name):
        return False
    name = loop.target.value
    stack: list[cst.CSTNode] = [loop.body]
    from tpulint.analysis.walker import iter_children

    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Subscript):
            node = node.func  # `self.projections[i](x)`: a container of callables
            called = True
        else:
            called = False
        if (
            isinstance(node, cst.Subscript)
            and is_self_attribute(node.value)
            and (called or ctx.value_kind(node.value) is ValueKind.MODULE)
            and any(
                isinstance(n, cst.Name) and n.value == name
                for element in node.slice
                for n in _names(element)
            )
        ):
            return True
        stack.extend(iter_children(node))
    return False


def _names(node: cst.CSTNode) -> list[cst.CSTNode]:
    from tpulint.analysis.walker import iter_children

    out: list[cst.CSTNode] = []
    stack = [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(iter_children(current))
    return out


# --- TPU204 -----------------------------------------------------------------------------

_PACKED = {
    "torch.nn.utils.rnn.pack_padded_sequence": "pack_padded_sequence",
    "torch.nn.utils.rnn.pad_packed_sequence": "pad_packed_sequence",
    "torch.nn.utils.rnn.pack_sequence": "pack_sequence",
}


class PackedSequence(Rule):
    """
    ## What it does
    Finds `pack_padded_sequence`, `pad_packed_sequence` and `pack_sequence` in model
    code: in `nn.Module`s and Lightning classes, and in the helpers their hot methods
    call.

    ## Why is this bad on TPU?
    A `PackedSequence` stores the batch by decreasing length with per-time-step batch
    sizes read from the lengths on the host: `pack_padded_sequence` needs the lengths as a
    CPU tensor (a device-to-host copy per step) and the packed data has a shape that
    depends on the sum of the lengths, so each new combination of lengths is a new graph.
    The padded output of `pad_packed_sequence` is as long as the longest sequence of the
    batch, another data-dependent shape.

    ## Example
    ```python
    from torch import nn
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


    class Encoder(nn.Module):
        def forward(self, x, lengths):
            packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
            out, _ = self.lstm(packed)
            out, _ = pad_packed_sequence(out, batch_first=True)
            return out
    ```

    ## Use instead
    ```python
    from torch import nn


    class Encoder(nn.Module):
        def forward(self, x, lengths):
            out, _ = self.lstm(x)
            mask = (self.positions[: x.size(1)] < lengths[:, None]).unsqueeze(-1)
            return out * mask
    ```

    Run the RNN on the padded batch (padded to a fixed length) and mask the outputs at
    padded positions; for bidirectional RNNs or last-state pooling, gather the state at
    `lengths - 1` instead of relying on packing.

    ## Fix safety
    For `pack_padded_sequence(x, ...)` the suggestion is `x` (display-only): without
    packing the RNN also processes the padding, so outputs past each length and the final
    hidden states differ unless they are masked or gathered.

    ## References
    - [pytorch/xla#1509: variable sequence lengths and bucketing on TPU](https://github.com/pytorch/xla/issues/1509)
    - [Hugging Face Accelerate: training on TPUs](https://huggingface.co/docs/accelerate/basic_tutorials/tpu)
    - [torch_xla troubleshooting: known performance caveats](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    """

    code = "TPU204"
    name = "packed-sequence"
    summary = "`pack_padded_sequence` / `pad_packed_sequence` in model code"
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_sometimes = True
    fix_message = "Run the RNN on the padded batch and mask"
    requires = ("pack_padded_sequence", "pad_packed_sequence", "pack_sequence")

    VALID = (
        # Data preparation outside model code.
        Valid(
            "from torch.nn.utils.rnn import pack_sequence\n\n\n"
            "def collate(items):\n    return pack_sequence(items, enforce_sorted=False)\n"
        ),
        # Another library's function of the same name.
        Valid(
            _MOD + "    def forward(self, x, lengths):\n"
            "        return self.pack_padded_sequence(x, lengths)\n"
        ),
    )
    INVALID = (
        Invalid(
            "import torch\nfrom torch import nn\nfrom torch.nn.utils import rnn\n\n\n"
            "class Encoder(nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        packed = rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True)\n"
            "        out, _ = self.lstm(packed)\n"
            "        out, _ = rnn.pad_packed_sequence(out, batch_first=True)\n"
            "        return out\n",
            count=2,
            line=8,
            expected_suggestion="import torch\nfrom torch import nn\n"
            "from torch.nn.utils import rnn\n\n\n"
            "class Encoder(nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        packed = x\n"
            "        out, _ = self.lstm(packed)\n"
            "        out, _ = rnn.pad_packed_sequence(out, batch_first=True)\n"
            "        return out\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        name = _PACKED.get(ctx.qualify(node.func) or "")
        if name is None:
            return
        klass = ctx.klass
        in_model = ctx.in_hot_code or (
            klass is not None
            and bool(klass.kind & (ClassKind.TORCH_MODULE | ClassKind.LIGHTNING_MODULE))
        )
        if not in_model or ctx.function is None:
            return
        if "device-check" in ctx.guards(node):
            return
        replacement = None
        args = positional(node)
        if name == "pack_padded_sequence" and args:
            replacement = args[0].value
        self.report(
            node,
            f"`{name}` in {ctx.hot_reason or f'`{ctx.function.name}`'} builds a packed batch "
            "whose layout depends on the lengths (read on the host): a sync and a new graph "
            "per length combination on TPU; run the RNN on the padded batch and mask",
            replacement=replacement,
        )


# --- TPU205 -----------------------------------------------------------------------------

_SIZE_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "rand", "randn", "arange"})
_SIZE_METHODS = frozenset(
    {
        "new_zeros",
        "new_ones",
        "new_empty",
        "new_full",
        "view",
        "reshape",
        "expand",
        "repeat",
        "narrow",
    }
)


class DataDependentSize(TrackingRule, Rule):
    """
    ## What it does
    Finds sizes read from the values of a device tensor, in code that runs every step:
    `torch.arange(lengths.max())`, `torch.zeros(n.sum(), d)`, `x[:, :lengths.max()]`,
    `x.new_zeros(int(lengths.max()))`, `F.pad(x, (0, n))`, `range(int(n.max()))`, and
    names bound to such values (`max_len = lengths.max().item()` used later as a size).
    Sizes from shapes (`x.size(1)`, `x.shape[0]`) are static and are not reported.

    ## Why is this bad on TPU?
    The size must be a Python number before the graph can be built, so the device tensor is
    copied to the host (a sync in every step), and the result's shape changes with the
    data: every distinct value compiles a new XLA graph. Padding to a fixed maximum length
    (a configuration value, or `x.size(1)`) and masking keeps one graph.

    ## Example
    ```python
    import torch
    from torch import nn


    class Align(nn.Module):
        def forward(self, x, lengths):
            max_len = lengths.max().item()
            positions = torch.arange(max_len, device=x.device)
            return x[:, :max_len] * (positions[None] < lengths[:, None]).unsqueeze(-1)
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn


    class Align(nn.Module):
        def forward(self, x, lengths):
            positions = torch.arange(x.size(1), device=x.device)
            return x * (positions[None] < lengths[:, None]).unsqueeze(-1)
    ```

    ## Fix safety
    No automatic fix: the static size to use (the padded length, a configured maximum) is
    a decision about the data.

    ## References
    - [torch_xla: recompilation causes (dynamic shapes)](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)
    - [torch_xla troubleshooting: known performance caveats](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    """

    code = "TPU205"
    hot_only = True
    name = "data-dependent-size"
    summary = "A size taken from a tensor's values (`torch.arange(lengths.max())`) in hot code"
    requires = ("max(", "min(", "sum(", ".item()", "count_nonzero(", "prod(")

    VALID = (
        Valid(
            _MOD + "    def forward(self, x):\n"
            "        n = x.size(1)\n        B, T = x.shape[:2]\n"
            "        pos = torch.arange(n, device=x.device)\n"
            "        return x[:, :T] + torch.zeros(B, T)[..., None] + pos\n"
        ),
        # Values that are not used as sizes.
        Valid(
            _MOD + "    def forward(self, x, lengths):\n"
            "        scale = lengths.max()\n        return x / scale\n"
        ),
        # Python lists of lengths (host data).
        Valid(
            _MOD + "    def forward(self, x, texts):\n"
            "        max_len = max(len(t) for t in texts)\n"
            "        return torch.zeros(len(texts), max_len)\n"
        ),
    )
    INVALID = (
        # EXAMPLES §1 #13: the size is read once and used later.
        Invalid(
            _MOD + "    def forward(self, emb, target_lens):\n"
            "        max_len = target_lens.max().item()\n"
            "        idx = torch.arange(max_len, device=emb.device)\n"
            "        return emb[:, idx]\n",
            line=7,
            message="used as a size",
        ),
        Invalid(
            _MOD + "    def forward(self, x, lengths):\n"
            "        x = x[:, : lengths.max()]\n"
            "        return x.new_zeros(int(lengths.sum()), 4)\n",
            count=2,
        ),
        # EXAMPLES §1 #12: a pad size computed from a length tensor.
        Invalid(
            "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
            "class Pad(nn.Module):\n"
            "    def forward(self, audio, audio_len):\n"
            "        padded_len = 8 * torch.ceil(audio_len / 8).int()\n"
            "        max_len = padded_len.max().int().item()\n"
            "        num_padding = max_len - audio.shape[1]\n"
            "        return F.pad(audio, (0, num_padding))\n",
            line=9,
        ),
    )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        if not hasattr(self, "_reported"):
            self._reported: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        sizes: list[cst.BaseExpression] = []
        name = torch_name(ctx, node)
        args = positional(node)
        if name is not None:
            last = name.rsplit(".", 1)[-1]
            if last in _SIZE_FACTORIES:
                sizes = [a.value for a in (args[:1] if last == "full" else args)]
                if last == "arange":
                    sizes = [a.value for a in args[:2]]
            elif last == "linspace" and len(args) > 2:
                sizes = [args[2].value]
            elif name in ("nn.functional.pad",) and len(args) > 1:
                sizes = _tuple_items(args[1].value)
        elif isinstance(node.func, cst.Name) and node.func.value == "range" and args:
            parent = ctx.parent(node)
            if isinstance(parent, cst.For) and parent.iter is node:
                sizes = [args[1].value if len(args) > 1 else args[0].value]
        else:
            method = method_name(node)
            if method in _SIZE_METHODS:
                if method == "narrow":
                    sizes = [args[2].value] if len(args) > 2 else []
                elif method == "new_full":
                    sizes = _tuple_items(args[0].value) if args else []
                else:
                    sizes = [a.value for a in args]
                    if len(sizes) == 1:
                        sizes = _tuple_items(sizes[0]) or sizes
        for size in sizes:
            self._check(size, node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Slice):
                for bound in (index.lower, index.upper):
                    if bound is not None:
                        self._check(bound, node)

    def _check(self, size: cst.BaseExpression, sink: cst.CSTNode) -> None:
        ctx = self.ctx
        source = value_size(ctx, size, self.bindings)
        if source is None:
            return
        reported = getattr(self, "_reported", None)
        if reported is None:
            reported = self._reported = set()
        if id(source) in reported:
            return
        if _quiet(ctx, sink):
            return
        reported.add(id(source))
        self.report(
            source,
            f"`{source_of(ctx, source)}` reads a device tensor's values and is used as a size "
            f"in `{source_of(ctx, sink, 50)}` ({ctx.hot_reason}): a sync every step and a new "
            "graph per value; use a static size (the padded length) and a mask",
        )


def _tuple_items(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(node, (cst.Tuple, cst.List)):
        return [e.value for e in node.elements if isinstance(e, cst.Element)]
    return []
