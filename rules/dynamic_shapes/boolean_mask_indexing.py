"""TPU202 boolean-mask-indexing."""

from __future__ import annotations

import ast

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.hot_code import index_elements, is_int_literal
from tpulint.analysis.values import CPU, DEVICE, NUMBER, UNKNOWN
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.rule import FixSpec, Invalid, Rule, Valid

from ..rewrite.masked import read_fix, write_fix
from ..shared.matchers import self_attribute_name, source_of, walk
from ..shared.tensors import (
    Bindings,
    TrackingRule,
    elementwise_mask,
    is_torch_tensor,
    mask_in_index,
)
from .helpers import _HEAD, _MOD, _maybe_device, _quiet


class BooleanMaskIndexing(TrackingRule, Rule):
    """
    ## What it does
    Finds indexing with a boolean mask in code that runs every step: reads such as
    `x[mask]`, `x[x > 0]`, `x[~m]`, `x[:, keep]` and writes such as `x[mask] = v`. An
    index is a mask when it is a comparison of tensors, `~m`, `&` / `|` of masks,
    `.bool()`, `torch.isnan` / `isfinite` / `logical_*`, a local bound to one of those, or
    a name that says so (`mask`, `loss_mask`, `keep`, `valid`, `is_target`), a value whose
    complement the code also indexes with (`x[self.labeled]` beside `y[~self.labeled]`: an
    attribute anywhere in the file, a local in the same function), or a helper's
    parameter that every call from the step passes a boolean tensor (`m.to(torch.bool)` in
    the caller, when it is not None; a call leaving it to its None default passes none; a
    step's `self.model(**batch)` gives each parameter annotated as a tensor the batch's
    entry of its name). Integer index
    tensors (`argsort`, `arange`, `topk` indices, `.long()`), the values a mask selects
    from a tensor that is no mask (`mask_i = i[mask]`: the select is reported, the gather
    `x[mask_i]` is not), slices, `None`, numbers, `...`, members of an Enum class
    (`batch[Key.pad_mask]`: a dict's key) and names or class attributes the project binds
    only to a string (`batch[IMAGE_MASKS]` with `IMAGE_MASKS = "image_masks"` here or in
    the module it is imported from) are not masks. A mask built on
    the host from shapes and constants (a torch factory without `device=`, or a copy of
    one, `.clone()`, set in place at host positions) is not reported: a CPU tensor
    indexed in place stays on the CPU, its `nonzero` runs there and the device gets a
    fixed index list. So is a mask made from a module global bound once at the top level
    to a torch factory without `device=` and never moved (`ARRANGE_MASK = torch.tensor([...])`,
    here or imported from another module of the project): built at import time, the same
    every step. The same holds for a host mask whose inputs are all
    fixed for the run: sample frequencies (`torch.fft.rfftfreq(n, d=1 / self.hparams.rate)`,
    `torch.linspace`), compared with numbers or hyperparameters (`self.hparams.low`),
    combined with `&` / `|` or narrowed in place (`keep &= freqs < self.hparams.high`),
    `torch.ones_like` of one. So is a part of such a mask picked by Python numbers
    (`torch.chunk(~torch.eye(n).bool().repeat(1, 2), world, dim=0)[rank]`), and what a
    method of the class (or a function of the module) given only Python values returns
    when its every `return` is such a mask. A mask drawn with `torch.bernoulli(p)` is
    where `p` is: `torch.full(shape, q, device=x.device)` puts it on the device, a device
    mask. So is a host mask its class builds in `__init__`
    and never sets or changes in place elsewhere (`self.mask = self.correlated(batch_size)`):
    built once, its count is the same in every step. A mask made on the host from data or
    random draws (`torch.rand(n) < p`) that selects device data is counted on the CPU (no
    sync), but the
    count still changes the shape: it is reported as such, with no rewrite (`torch.where`
    wants the mask on the data's device: `keep.to(x.device)`); over data not known to be on
    the device it is not reported (the code works on the host). Helpers handed only host
    copies (`scores.detach().cpu()` in the step) select on the CPU and are not reported.

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
    # `mask_in_index` skips slices and literal integers, strings, `...` and `None`.
    hot_shapes = {
        ast.Subscript: lambda node, _code: any(
            not isinstance(index, ast.Slice)
            and not is_int_literal(index)
            and not (isinstance(index, ast.Constant) and isinstance(index.value, str))
            and not (isinstance(index, ast.Constant) and index.value in (None, Ellipsis))
            for index in index_elements(node)
        )
    }

    VALID = (
        # A module-level table built at import time by a torch factory without a device and
        # never moved: a CPU constant, so its selections and the positions it writes are
        # fixed (one index list, counted on the host once per call, no sync).
        Valid(
            "import lightning as L\nimport torch\n\n"
            "SLOTS = torch.tensor([4, 0, 2, 2, 1])\n"
            "SLOT_MASK = torch.tensor([1, 1, 1, 0, 1])\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        out = self.net(batch['x'])\n"
            "        used = SLOTS[SLOT_MASK == 1]\n"
            "        out[:, SLOT_MASK == 0] = 0\n"
            "        return out.sum() + used.sum()\n"
        ),
        # A name or a class attribute the project binds only to a string is a dict's key
        # (`batch[IMAGE_MASKS]`), here or in the module it is imported from.
        Valid(
            "import lightning as L\n\n"
            "IMAGE_MASKS = 'image_masks'\n\n\n"
            "class Keys:\n"
            "    PAD_MASK = 'pad_mask'\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x = batch['x'][batch[IMAGE_MASKS]]\n"
            "        return x.sum() + batch[Keys.PAD_MASK].sum()\n"
        ),
        # A member of an Enum class as the index: a dict lookup by key (`batch[Key.mask]`),
        # whatever the member is called.
        Valid(
            "import enum\n\nimport lightning as L\nimport torch\n\n\n"
            "class Field(enum.Enum):\n"
            "    x = 'x'\n"
            "    pad_mask = 'pad_mask'\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        keep = batch[Field.pad_mask].flatten()\n"
            "        return self.net(batch[Field.x]).sum() * keep.sum()\n"
        ),
        # Names unpacked from `torch.nonzero(..., as_tuple=True)` hold index tensors, not
        # masks, whatever they are called (the `nonzero` is TPU201's).
        Valid(
            "import torch\nfrom torch import nn\n\n\nclass Pick(nn.Module):\n"
            "    def forward(self, x, table):\n"
            "        row_mask, _ = torch.nonzero(x.norm(dim=1, keepdim=True), as_tuple=True)\n"
            "        out = torch.zeros(x.shape[0], 4, device=x.device)\n"
            "        out[row_mask, table.argmax(1)] = 1.0\n"
            "        return x[row_mask] @ out\n"
        ),
        # `~` of an attribute outside an index (an integer flag toggled bitwise) says nothing
        # of the attribute as an index.
        Valid(
            "import lightning as L\nimport torch\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def load_inputs(self, batch):\n"
            "        self.order = batch['order']\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        self.load_inputs(batch)\n"
            "        flipped = ~self.order\n"
            "        return self.net(batch['x'])[self.order].sum() + flipped.sum()\n"
        ),
        # A local's complement indexed in another function: a different value there (the
        # positions `order` picks in the step may be integers).
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        order = batch['order']\n"
            "        return self.net(batch['x'])[order].sum()\n\n"
            "    def plot_rest(self, batch):\n"
            "        order = batch['order']\n"
            "        return self.net(batch['x'])[~order].sum()\n"
        ),
        # What a library object returns for numpy arrays is numpy data (filtered on the host).
        Valid(
            "import numpy as np\nfrom torch import nn\nfrom peaks import Tracker\n\n\n"
            "class Head(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.tracker = Tracker(fps=50)\n\n"
            "    def forward(self, prob):\n"
            "        out = self.tracker(np.stack([prob.detach().cpu().numpy()]))\n"
            "        return out[out[:, 1] == 1]\n"
        ),
        # A write into the copy a host-mask selection makes: dropped, so never compiled or run.
        Valid(
            _MOD + "    def forward(self, joints):\n"
            "        swap = torch.rand(joints.shape[0]) < 0.1\n"
            "        joints[swap][:, 0] = joints[swap][:, 1]\n"
            "        return joints.sum()\n"
        ),
        # Selected on the host: `device` is a CUDA chain, the CPU on a TPU host.
        Valid(
            _MOD + "    def forward(self, x):\n"
            "        device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            "        ids = x.argmax(-1).to(device)\n"
            "        return ids[ids > 0]\n"
        ),
        # The same chain held by a module global the module binds once: a host tensor.
        Valid(
            "import numpy as np\nimport torch\nfrom torch import nn\n\n"
            "where = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n\n"
            "class Head(nn.Module):\n"
            "    def forward(self, x):\n"
            "        signs = torch.from_numpy(np.ones(5)).float().to(where)\n"
            "        signs[signs == 0] = -1\n"
            "        return x * signs.sum()\n"
        ),
        # Integer indices, slices, None, numbers and ellipsis are static.
        Valid(
            _MOD + "    def forward(self, x, lengths):\n"
            "        order = lengths.argsort(descending=True)\n"
            "        idx = torch.arange(4)\n"
            "        y = x[order][:, None, ..., 0][idx][1:3]\n"
            "        keep = torch.topk(x, 3).indices\n"
            "        return y + x[keep]\n"
        ),
        # A mask built on the host from shapes and constants (a factory without `device=`,
        # never moved): its count is taken on the CPU and fixed, the device gets a fixed
        # index list.
        Valid(
            _MOD + "    def forward(self, emb, n_steps):\n"
            "        drop = torch.full((n_steps * 4,), False)\n"
            "        drop[torch.arange(n_steps - 1) + 1] = True\n"
            "        return emb[:, ~drop]\n"
        ),
        # A host band mask from sample frequencies and hyperparameters (combined with `&`,
        # narrowed in place with `&=`): the same count in every step, taken on the CPU.
        Valid(
            "import lightning as L\nimport torch\n\n\n"
            "class Spectral(L.LightningModule):\n"
            "    def __init__(self, rate: float = 64.0, low: float = 2.0, high=None):\n"
            "        super().__init__()\n"
            "        self.save_hyperparameters()\n\n"
            "    def band(self, signal):\n"
            "        freqs = torch.fft.rfftfreq(signal.shape[-1], d=1 / self.hparams.rate)\n"
            "        keep = torch.ones_like(freqs, dtype=torch.bool)\n"
            "        keep &= freqs > self.hparams.low\n"
            "        if self.hparams.high is not None:\n"
            "            keep &= freqs < self.hparams.high\n"
            "        inner = (freqs > self.hparams.low) & (freqs < 20.0)\n"
            "        spec = torch.fft.rfft(signal, dim=-1)\n"
            "        return spec[..., keep].abs().sum() + spec[..., inner].abs().sum()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return self.band(batch)\n"
        ),
        # A host mask over data not known to be on the device: the code works on the host.
        Valid(
            _MOD + "    def forward(self, feats):\n"
            "        points = self.cache.get('points')\n"
            "        keep = torch.rand(len(points)) < 0.5\n"
            "        return feats.sum() + len(points[keep])\n"
        ),
        # A host copy of such a mask, set at positions from host metadata (segment bounds):
        # a CPU tensor indexed in place stays on the CPU, its `nonzero` runs there.
        Valid(
            _MOD + "    def forward(self, x, bounds):\n"
            "        template = torch.zeros(x.shape[0] - 1, dtype=torch.bool)\n"
            "        ends = template.clone()\n"
            "        ends[bounds[1:-1] - 1] = True\n"
            "        step = x[1:] - x[:-1]\n"
            "        step[ends] = 0.0\n"
            "        return step\n"
        ),
        # A host identity mask laid out over the batch (never moved): fixed count, host
        # `nonzero`, with or without the bool dtype at the factory.
        Valid(
            _MOD + "    def forward(self, pairs):\n"
            "        b, n = pairs.shape[0], pairs.shape[1]\n"
            "        self_pairs = torch.eye(n, dtype=torch.bool).unsqueeze(0).expand(b, -1, -1)\n"
            "        pairs[self_pairs] = 0\n"
            "        loops = torch.eye(n).unsqueeze(0).expand(b, -1, -1)\n"
            "        pairs[loops.bool()] = 1.0 / n\n"
            "        return pairs\n"
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
        # A graph batch's node-to-graph map named like a mask: the function uses it as an
        # integer index (a scatter's index, the number of graphs), directly or through a
        # helper that does, so `x[m]` is a gather of per-graph rows, not a mask selection.
        Valid(
            "from torch_scatter import scatter_mean\n"
            + _MOD
            + "    def forward(self, x, batch_mask):\n"
            "        centers = scatter_mean(x, batch_mask, dim=0)\n"
            "        return x - centers[batch_mask]\n"
        ),
        Valid(
            "import torch\nfrom torch import nn\n\n\n"
            "def per_graph_sum(values, index, n_graphs):\n"
            "    out = values.new_zeros(n_graphs, values.shape[1])\n"
            "    return out.index_add(0, index, values)\n\n\n"
            "class Head(nn.Module):\n"
            "    def forward(self, h, graph, n_graphs):\n"
            "        node_mask = graph['mask']\n"
            "        totals = per_graph_sum(h, node_mask, n_graphs)\n"
            "        return h / totals[node_mask] + self.center(h, graph, n_graphs)\n\n"
            "    def center(self, h, graph, n_graphs):\n"
            "        return h - per_graph_sum(h, graph['mask'], n_graphs)[graph['mask']]\n"
        ),
        # ... or every caller passes what it scatters by; parts of a concatenated index.
        Valid(
            "from torch_scatter import scatter_mean\n" + _MOD + "    def forward(self, h, graph):\n"
            "        centers = scatter_mean(h, graph['mask'], dim=0)\n"
            "        return self.shift(h, centers, graph['mask'])\n\n"
            "    def shift(self, h, centers, node_mask):\n"
            "        return h - centers[node_mask]\n"
        ),
        Valid(
            "import torch\nfrom torch_scatter import scatter_mean\nfrom torch import nn\n\n\n"
            "def joint_mean(x, a_index, b_index):\n"
            "    return scatter_mean(x, torch.cat((a_index, b_index)), dim=0)\n\n\n"
            "class Head(nn.Module):\n"
            "    def forward(self, x, t, lig_mask, pocket_mask):\n"
            "        mean = joint_mean(x, lig_mask, pocket_mask)\n"
            "        return mean + t[lig_mask] + t[pocket_mask]\n"
        ),
        Valid(
            _MOD + "    def forward(self, x, lig_mask):\n"
            "        n = lig_mask.max() + 1\n"
            "        scale = x.new_ones(n, 1)\n"
            "        return x * scale[lig_mask]\n"
        ),
        # Only in the NaN recovery branch: a numeric anomaly, not a per-step cost.
        Valid(
            _MOD + "    def forward(self, x, v):\n"
            "        if torch.any(torch.isnan(v)):\n"
            "            v[torch.isnan(v)] = 0.0\n"
            "        return x + v\n"
        ),
        # Under a device check or a rare guard.
        Valid(
            _HEAD + "    def validation_step(self, batch, batch_idx):\n"
            "        x = self(batch)\n"
            "        if batch_idx == 0:\n            self.first = x[x > 0]\n"
        ),
        # A host mask its class builds once in `__init__` from Python numbers and never
        # changes: the same count in every step, one graph.
        Valid(
            "import torch\nfrom torch import nn\n\n\nclass PairLoss(nn.Module):\n"
            "    def __init__(self, n):\n"
            "        super().__init__()\n"
            "        self.n = n\n"
            "        self.negatives_mask = self.correlated(n)\n"
            "        self.similarity = nn.CosineSimilarity(dim=2)\n\n"
            "    def correlated(self, n):\n"
            "        mask = torch.ones((2 * n, 2 * n), dtype=torch.bool)\n"
            "        mask = mask.fill_diagonal_(0)\n"
            "        for i in range(n):\n"
            "            mask[i, n + i] = 0\n"
            "        return mask\n\n"
            "    def forward(self, z_i, z_j):\n"
            "        z = torch.cat((z_i, z_j), dim=0)\n"
            "        sim = self.similarity(z.unsqueeze(1), z.unsqueeze(0))\n"
            "        return sim[self.negatives_mask].reshape(2 * self.n, -1).logsumexp(-1)\n"
        ),
        # A helper handed the indices of a mask (`nonzero(as_tuple=True)`, returned in a
        # tuple): integer indexing, no mask.
        Valid(
            "import lightning as L\n"
            "import torch\n"
            "from torch import nn\n"
            "\n"
            "\n"
            "class Pick(nn.Module):\n"
            "    def forward(self, x, pad_mask):\n"
            "        chosen = torch.zeros_like(pad_mask)\n"
            "        chosen[:, ::4] = 1.0\n"
            "        (top, where) = self._indices(chosen=chosen)\n"
            "        return self._scatter(x=x, top=top, where=where)\n"
            "\n"
            "    def _indices(self, chosen: torch.Tensor):\n"
            "        counts = chosen.long().sum(dim=1)\n"
            "        top = counts.max()\n"
            "        inside = torch.arange(top, device=chosen.device) < counts.unsqueeze(dim=-1)\n"
            "        where = inside.nonzero(as_tuple=True)\n"
            "        return (top, where)\n"
            "\n"
            "    def _scatter(self, x: torch.Tensor, top: int, where: tuple):\n"
            "        out = x.new_zeros(x.shape[0], top)\n"
            "        out[where] = 1.0\n"
            "        return out\n"
            "\n"
            "\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.pick = Pick()\n"
            "\n"
            "    def training_step(self, batch, batch_idx):\n"
            '        return self.pick(batch["x"], batch["pad"]).sum()\n'
        ),
        # The parameter is given an integer index (`.to(torch.long)`): a gather, no mask.
        Valid(
            "from typing import Optional\n\nimport lightning as L\nimport torch\n"
            "from torch import nn\n\n\n"
            "class Blend(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.token = nn.Parameter(torch.zeros(16))\n\n"
            "    def forward(self, feats, hidden=None, debug: Optional[bool] = None):\n"
            "        if hidden is not None:\n"
            "            feats[hidden] = self.token\n"
            "        if debug:\n"
            "            print(feats.shape)\n"
            "        return feats\n\n\n"
            "class Net(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.blend = Blend()\n\n"
            "    def forward(self, feats: torch.Tensor, hidden: Optional[torch.Tensor] = None,\n"
            "                debug: Optional[bool] = None):\n"
            "        if hidden is not None:\n"
            "            hidden = hidden.to(torch.long)\n"
            "        return self.blend(feats, hidden=hidden, debug=debug)\n\n"
            "    def embed(self, feats):\n"
            "        return self.blend(feats)\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = Net()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        self.net.embed(batch['feats'])\n"
            "        return self.net(**batch).sum()\n"
        ),
        # A helper called in a comprehension whose tuple target iterates `zip` of lists
        # of host copies (`.cpu()`): its parameters are CPU tensors, like a for loop's.
        Valid(
            "import lightning as L\nimport torch\n\n\n"
            "def hit_rate(guess, truth):\n"
            "    return float(truth.bool()[guess.bool()].float().mean())\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = torch.nn.Linear(8, 1)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        xs, ys = batch\n"
            "        guesses, truths = [], []\n"
            "        for i in range(xs.shape[0]):\n"
            "            guesses.append((self.net(xs[i]) > 0).detach().cpu())\n"
            "            truths.append(ys[i].detach().cpu())\n"
            "        rates = [hit_rate(g, t) for g, t in zip(guesses, truths)]\n"
            "        self.log('rate', sum(rates) / len(rates))\n"
            "        return self.net(xs).sum()\n"
        ),
    )
    INVALID = (
        # A module-level table the module moves to the device somewhere (`.to(`): no longer
        # known to stay on the CPU.
        Invalid(
            "import lightning as L\nimport torch\n\n"
            "SLOT_MASK = torch.tensor([1, 1, 1, 0, 1])\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def on_fit_start(self):\n"
            "        self.mask = SLOT_MASK.to(self.device)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        out = self.net(batch['x'])\n"
            "        return out[:, SLOT_MASK == 1].sum()\n",
            message="selects by the boolean mask `SLOT_MASK == 1`",
        ),
        # A module-level CPU table selected by a device mask: the mask's values decide.
        Invalid(
            "import lightning as L\nimport torch\n\n"
            "SLOTS = torch.tensor([4, 0, 2, 2, 1])\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        y = batch['y']\n"
            "        return SLOTS[y > 0].sum() + self.net(batch['x']).sum()\n",
            message="selects by the boolean mask `y > 0`",
        ),
        # A module name whose value is not a string literal may hold a mask.
        Invalid(
            "import lightning as L\n\n"
            "IMAGE_MASKS = make_masks()\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return batch['x'][IMAGE_MASKS].sum()\n",
            line=8,
            count=1,
        ),
        # The values a boolean mask selects (`mask_i = i[mask]`, the rows of an edge index)
        # are integer indices, whatever their name: the select is reported, the gather by
        # them (`graph[mask_i]`) is not.
        Invalid(
            "import lightning as L\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        x, edges, graph = batch\n"
            "        j, i = edges\n"
            "        mask = j < i\n"
            "        mask_i = i[mask]\n"
            "        return x[graph[mask_i]].sum()\n",
            line=9,
            count=1,
        ),
        # A mask the step's set-up method stores from the batch, used as it is and as its
        # complement (`~`): both select rows by the mask's values.
        Invalid(
            "import lightning as L\nimport torch\nimport torch.nn.functional as F\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def load_inputs(self, batch):\n"
            "        self.images = batch['images']\n"
            "        self.classes = batch['classes']\n"
            "        self.annotated = batch['annotated']\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        self.load_inputs(batch)\n"
            "        logits = self.net(self.images)\n"
            "        supervised = F.cross_entropy(logits[self.annotated], "
            "self.classes[self.annotated])\n"
            "        spread = logits[~self.annotated].softmax(-1).var()\n"
            "        return supervised + spread\n",
            count=2,
            line=15,
            message="by the boolean mask `self.annotated`",
        ),
        # The same with a local of the step.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        seen = batch['seen']\n"
            "        out = self.net(batch['x'])\n"
            "        fit = out[seen].mean()\n"
            "        spread = out[~seen].var()\n"
            "        return fit + spread\n",
            count=2,
            line=9,
            message="by the boolean mask `seen`",
        ),
        # The same comprehension over lists of device tensors: the helper masks them on
        # the TPU.
        Invalid(
            "import lightning as L\nimport torch\n\n\n"
            "def hit_rate(guess, truth):\n"
            "    return float(truth.bool()[guess.bool()].float().mean())\n\n\n"
            "class LM(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = torch.nn.Linear(8, 1)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        xs, ys = batch\n"
            "        guesses, truths = [], []\n"
            "        for i in range(xs.shape[0]):\n"
            "            guesses.append((self.net(xs[i]) > 0).detach())\n"
            "            truths.append(ys[i].detach())\n"
            "        rates = [hit_rate(g, t) for g, t in zip(guesses, truths)]\n"
            "        self.log('rate', sum(rates) / len(rates))\n"
            "        return self.net(xs).sum()\n",
            line=6,
            message="selects by the boolean mask",
        ),
        # The step's batch spread into a forward (`**batch`): a parameter annotated as a
        # tensor gets a tensor on the device, made boolean (`.to(torch.bool)`) when it is not
        # None and handed to a sub-module, which another call leaves to its None default;
        # the parameter annotated `Optional[bool]` stays a Python flag.
        Invalid(
            "from typing import Optional\n\nimport lightning as L\nimport torch\n"
            "from torch import nn\n\n\n"
            "class Blend(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.token = nn.Parameter(torch.zeros(16))\n\n"
            "    def forward(self, feats, hidden=None, debug: Optional[bool] = None):\n"
            "        if hidden is not None:\n"
            "            feats[hidden] = self.token\n"
            "        if debug:\n"
            "            print(feats.shape)\n"
            "        return feats\n\n\n"
            "class Net(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.blend = Blend()\n\n"
            "    def forward(self, feats: torch.Tensor, hidden: Optional[torch.Tensor] = None,\n"
            "                debug: Optional[bool] = None):\n"
            "        if hidden is not None:\n"
            "            hidden = hidden.to(torch.bool)\n"
            "        return self.blend(feats, hidden=hidden, debug=debug)\n\n"
            "    def embed(self, feats):\n"
            "        return self.blend(feats)\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = Net()\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        self.net.embed(batch['feats'])\n"
            "        return self.net(**batch).sum()\n",
            line=15,
            message="writes through a boolean mask",
        ),
        # The same attribute mask rebuilt in the step for the batch's size: a count per size.
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass PairLoss(nn.Module):\n"
            "    def __init__(self, n):\n"
            "        super().__init__()\n"
            "        self.negatives_mask = self.correlated(n)\n"
            "        self.similarity = nn.CosineSimilarity(dim=2)\n\n"
            "    def correlated(self, n):\n"
            "        mask = torch.ones((2 * n, 2 * n), dtype=torch.bool)\n"
            "        mask = mask.fill_diagonal_(0)\n"
            "        for i in range(n):\n"
            "            mask[i, n + i] = 0\n"
            "        return mask\n\n"
            "    def forward(self, z_i, z_j):\n"
            "        z = torch.cat((z_i, z_j), dim=0)\n"
            "        sim = self.similarity(z.unsqueeze(1), z.unsqueeze(0))\n"
            "        self.negatives_mask = self.correlated(z_i.shape[0])\n"
            "        return sim[self.negatives_mask].reshape(z.shape[0], -1).logsumexp(-1)\n",
            line=22,
        ),
        # A random mask made on the host (a factory without `device=`, compared with a
        # number) over device data: counted on the CPU with no sync, but a graph per count;
        # no rewrite (`torch.where` wants the mask where the data is).
        # The same dropped write with a mask of device values: counting it reads the device.
        Invalid(
            _MOD + "    def forward(self, joints):\n"
            "        joints[joints[:, 0] > 0][:, 0] = 0.0\n"
            "        return joints.sum()\n"
        ),
        Invalid(
            _MOD + "    def forward(self, feats, sizes):\n"
            "        owner = torch.repeat_interleave(torch.arange(4), torch.tensor(sizes))\n"
            "        return [feats[owner == i] for i in range(4)]\n",
            message="use `torch.where((owner == i).to(feats.device), feats, 0)`",
        ),
        Invalid(
            _MOD + "    def forward(self, feats, rate=0.1):\n"
            "        share = (1 - rate) * torch.rand(1) + rate\n"
            "        drop = torch.rand(feats.shape[0]) < share\n"
            "        return feats[drop]\n",
            message="the host mask `drop` (a CPU tensor): torch counts it on the CPU, no sync",
        ),
        # A fixed band narrowed by a random draw: the count changes from step to step.
        Invalid(
            _MOD + "    def forward(self, feats):\n"
            "        keep = torch.linspace(0, 1, feats.shape[0]) > 0.2\n"
            "        keep &= torch.rand(feats.shape[0]) < 0.5\n"
            "        return feats[keep]\n",
            message="the host mask `keep` (a CPU tensor)",
        ),
        # The input's own device (the XLA device on a TPU) wins over the CUDA chain.
        Invalid(
            _MOD + "    def forward(self, x):\n"
            "        device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            "        place = x.device if x.device.type != 'cpu' else device\n"
            "        ids = x.argmax(-1).to(place)\n"
            "        return ids[ids > 0]\n",
            line=10,
        ),
        # A global the module rebinds (to the XLA device when run): its place is not known.
        Invalid(
            "import torch\nfrom torch import nn\n\n"
            "where = 'cuda' if torch.cuda.is_available() else 'cpu'\n\n\n"
            "class Head(nn.Module):\n"
            "    def forward(self, x):\n"
            "        ids = x.argmax(-1).to(where)\n"
            "        return ids[ids > 0]\n\n\n"
            "def main(xla_device):\n"
            "    global where\n"
            "    where = xla_device\n",
            line=10,
        ),
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
            message="and in the same statement: `x[x > 0]`",  # one statement, one finding
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
            # The write and the reads of one statement: one finding, the reads related.
            message="writes through a boolean mask",
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
        # The same identity mask made on the device (`type_as`): its `nonzero` syncs.
        Invalid(
            _MOD + "    def forward(self, pairs):\n"
            "        n = pairs.shape[1]\n"
            "        loops = torch.eye(n).type_as(pairs).bool().unsqueeze(0)\n"
            "        pairs[loops.expand(pairs.shape[0], -1, -1)] = 0.0\n"
            "        return pairs\n",
            message="writes through a boolean mask",
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
        if ctx.value_kind(mask) is CPU and (
            _static_host_mask(ctx, mask, self.bindings) or _constructed_mask(ctx, mask, node)
        ):
            # A mask built on the host from shapes and constants: its `nonzero` runs on the
            # CPU and its count is fixed, so the device sees one fixed index list.
            return
        base = node.value
        kind = ctx.value_kind(base)
        if _module_constant(ctx, base) and _maybe_device(ctx.value_kind(mask)):
            # `TABLE[y > 0]` of a module-level CPU tensor by a device mask: the mask says
            # the selection runs with device values (as before the table was known)
            kind = UNKNOWN
        if not _maybe_device(kind):
            return
        if isinstance(base, (cst.List, cst.Tuple, cst.Dict)):
            return
        if _quiet(ctx, node):
            return
        single = len(node.slice) == 1
        parent = ctx.parent(node)
        if ctx.value_kind(mask) is CPU and _dropped_copy_statement(ctx, node):
            return
        # A mask on the host (`torch.rand(n) < p`, no `device=`) over device data: torch counts
        # it on the CPU (no sync), but each count is still a new graph on the device. Over data
        # not known to be on the device, a host mask says the code works on the host.
        self._host_mask = ctx.value_kind(mask) is CPU
        if self._host_mask and kind is not DEVICE:
            return
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
        # `masked_fill_` / `torch.where` want the mask where the data is: no rewrite of a host
        # mask over device data.
        self._report(node, mask, base, "write", None if self._host_mask else fix)

    def _read(
        self, node: cst.Subscript, mask: cst.BaseExpression, base: cst.BaseExpression, single: bool
    ) -> None:
        proven = single and self._provably_same_shape(mask, base)
        fix = read_fix(self.ctx, self.bindings, node, mask, proven=proven)
        self._report(node, mask, base, "read", None if self._host_mask else fix)

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
        if getattr(self, "_host_mask", False):
            plain = mask_code.replace(".", "").replace("_", "").isalnum()
            moved = f"{mask_code if plain else f'({mask_code})'}.to({bases[0]}.device)"
            verb = (
                "writes through"
                if what == "write"
                else ("select" if len(subscripts) > 1 else "selects") + " by"
            )
            use = (
                f"`{bases[0]}.masked_fill_({moved}, v)`"
                if what == "write"
                else f"`torch.where({moved}, {bases[0]}, 0)` with masked sums and means"
            )
            return (
                f"{names} in {ctx.hot_reason} {verb} the host mask `{mask_code}` (a CPU "
                "tensor): torch counts it on the CPU, no sync, but the size follows its "
                f"values, so XLA compiles a graph per count; use {use}"
            )
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


# torch factories whose values come from their arguments alone (shapes, numbers).
_STATIC_FACTORIES = frozenset(
    {
        "full",
        "zeros",
        "ones",
        "empty",
        "arange",
        "eye",
        "linspace",
        "logspace",
        "fft.fftfreq",
        "fft.rfftfreq",
        "ones_like",
        "zeros_like",
        "full_like",
    }
)
# Factories whose values come from their arguments' shapes only (and the given fill).
_LIKE_FACTORIES = frozenset({"ones_like", "zeros_like", "full_like"})

# Methods that copy a tensor where it is, values and all, or lay its values out anew
# (`torch.eye(n, dtype=torch.bool).unsqueeze(0).expand(b, -1, -1)`): shapes and
# constants in, shapes and constants out.
_COPIES = frozenset(
    {
        "clone",
        "detach",
        "contiguous",
        "bool",
        "unsqueeze",
        "squeeze",
        "expand",
        "view",
        "reshape",
        "repeat",
        "flatten",
        "transpose",
        "permute",
        "t",
        "flip",
        "tril",
        "triu",
    }
)


def _module_constant(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """A module global the inference knows holds a CPU tensor (bound once at the top level
    to a torch factory without a device, never changed in place or moved)."""
    return (
        isinstance(node, cst.Name)
        and not ctx.values.is_local(node.value, node)
        and ctx.value_kind(node) is CPU
    )


def _static_host_mask(
    ctx: FileContext, node: cst.BaseExpression, bindings: Bindings, depth: int = 0
) -> bool:
    """Whether a CPU mask's values come from shapes and constants only: a torch factory
    (`torch.full((n,), False)`, `torch.arange(n) < k`), its negation or comparison with
    numbers, a host copy of one (`m.clone()`), a name bound to one. A CPU mask computed from
    data (`lengths.cpu() > 3`, a
    `repeat_interleave` of per-sample counts) changes its count with the data."""
    if depth > 12:
        return False
    d = depth + 1
    if isinstance(node, cst.UnaryOperation):
        return _static_host_mask(ctx, node.expression, bindings, d)
    if isinstance(node, (cst.Comparison, cst.BinaryOperation)):
        # `torch.arange(n) < k`, `(freqs > self.hparams.low) & (freqs < high)`
        operands = (
            [node.left, *(c.comparator for c in node.comparisons)]
            if isinstance(node, cst.Comparison)
            else [node.left, node.right]
        )
        tensors = [
            o for o in operands if not ctx.value_kind(o).is_host and not _run_setting(ctx, o)
        ]
        return bool(tensors) and all(_static_host_mask(ctx, t, bindings, d) for t in tensors)
    if isinstance(node, cst.Name):
        if _module_constant(ctx, node):
            # `ARRANGE_MASK = torch.tensor([...])` bound once at the module's top level and
            # never moved: a CPU tensor built at import time, the same every step
            return True
        binding = bindings.lookup(node.value)
        if binding is None or binding.value is None or binding.unpack_index is not None:
            return False
        if isinstance(binding.node, cst.AugAssign):
            # `mask &= freqs > low`: every binding of the name in its function counts.
            return _every_binding_static(ctx, node.value, binding.node, bindings, d)
        return _static_host_mask(ctx, binding.value, bindings, d)
    if isinstance(node, cst.Subscript):
        # `torch.chunk(full, world, dim=0)[rank]`, `template[:n]`: a part of a static host
        # mask picked by Python numbers.
        if not all(_number_index(ctx, element) for element in node.slice):
            return False
        value = node.value
        if isinstance(value, cst.Call):
            parts = _split_source(ctx, value)
            if parts is not None:
                return _static_host_mask(ctx, parts, bindings, d)
        return _static_host_mask(ctx, value, bindings, d)
    if isinstance(node, cst.Call) and _static_helper_result(ctx, node, d):
        return True
    if isinstance(node, cst.Call):
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in _COPIES
            and all(ctx.value_kind(a.value).is_host for a in node.args)
            and ctx.value_kind(func.value) is CPU
        ):
            # `template.clone()`, `eye.unsqueeze(0).expand(b, -1, -1)`: a host copy or
            # layout of a static host mask, by host numbers.
            return _static_host_mask(ctx, func.value, bindings, d)
        qualified = ctx.qualify(func) or ""
        if not qualified.startswith("torch.") or qualified[6:] not in _STATIC_FACTORIES:
            return False
        positional = [a.value for a in node.args if a.keyword is None]
        if qualified[6:] in _LIKE_FACTORIES and positional:
            # `torch.ones_like(freqs, dtype=torch.bool)`: the shape of a static host tensor.
            first, positional = positional[0], positional[1:]
            if not _static_host_mask(ctx, first, bindings, d):
                return False
        return all(ctx.value_kind(a).is_host or _run_setting(ctx, a) for a in positional)
    return False


# torch functions (and tensor methods) that cut a tensor into parts: `torch.chunk(m, k)[i]`.
_SPLITS = frozenset({"chunk", "split", "tensor_split", "unbind"})


def _number_index(ctx: FileContext, element: cst.SubscriptElement) -> bool:
    """An index by Python numbers only: `[rank]`, `[:n]`, `[1:-1]`."""
    index = element.slice
    if isinstance(index, cst.Slice):
        parts = [p for p in (index.lower, index.upper, index.step) if p is not None]
    else:
        parts = [index.value]
    return all(is_int_literal(p) or ctx.value_kind(p) is NUMBER for p in parts)


def _split_source(ctx: FileContext, call: cst.Call) -> cst.BaseExpression | None:
    """The tensor `torch.chunk(m, k, dim=0)` or `m.split(n)` cuts, when the other
    arguments are host values."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in _SPLITS:
        qualified = ctx.qualify(func) or ""
        if qualified.startswith("torch.") and qualified[6:] in _SPLITS and call.args:
            source, rest = call.args[0].value, call.args[1:]
        elif not qualified.startswith("torch."):
            source, rest = func.value, call.args
        else:
            return None
        if all(ctx.value_kind(a.value).is_host for a in rest):
            return source
    return None


def _static_helper_result(ctx: FileContext, call: cst.Call, depth: int) -> bool:
    """`self._block_mask(len(x), rank)`: a method of the class (or a function of the
    module) given host values only, whose every `return` is a static host mask (built from
    its parameters, shapes and constants)."""
    if depth > 6:
        return False
    if not all(ctx.value_kind(a.value).is_host and not a.star for a in call.args):
        return False
    callee = _local_callee(ctx, call)
    if callee is None:
        return False
    local = Bindings(ctx.module)
    local.enter_function(callee)
    returns: list[cst.Return] = []
    callee.body.visit(_BodyBindings(local, returns))
    return bool(returns) and all(
        r.value is not None and _static_host_mask(ctx, r.value, local, depth + 1) for r in returns
    )


def _local_callee(ctx: FileContext, call: cst.Call) -> cst.FunctionDef | None:
    """The function a call runs when it is `self.name(...)` of the enclosing class or
    `name(...)` of a function defined at the module's top level."""
    func = call.func
    if (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value == "self"
    ):
        cls = next((a for a in ctx.ancestors(call) if isinstance(a, cst.ClassDef)), None)
        if cls is None:
            return None
        found = [
            s
            for s in cls.body.body
            if isinstance(s, cst.FunctionDef) and s.name.value == func.attr.value
        ]
    elif isinstance(func, cst.Name):
        found = [
            s
            for s in ctx.module.body
            if isinstance(s, cst.FunctionDef) and s.name.value == func.value
        ]
    else:
        return None
    return found[0] if len(found) == 1 and not found[0].decorators else None


class _BodyBindings(cst.CSTVisitor):
    """The bindings and `return`s of one function body, in source order (nested functions
    and classes are their own scopes)."""

    def __init__(self, bindings: Bindings, returns: list[cst.Return]) -> None:
        self.bindings = bindings
        self.returns = returns

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        self.bindings.on_assign(node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.bindings.on_ann_assign(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.bindings.on_aug_assign(node)

    def visit_For(self, node: cst.For) -> None:
        self.bindings.on_for(node)

    def visit_Return(self, node: cst.Return) -> None:
        self.returns.append(node)


def _run_setting(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """`self.hparams.low`, `self.hparams["low"]`: a hyperparameter, fixed for the run
    (Lightning's `save_hyperparameters` stores the constructor's arguments)."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        inner = node.value
        if (
            isinstance(inner, cst.Attribute)
            and inner.attr.value == "hparams"
            and isinstance(inner.value, cst.Name)
            and inner.value.value == "self"
        ):
            return True
        node = inner
    return False


def _every_binding_static(
    ctx: FileContext, name: str, last: cst.CSTNode, bindings: Bindings, depth: int
) -> bool:
    """Whether every binding of `name` in the function around `last` gives a static host
    mask: `keep = torch.ones_like(freqs, dtype=torch.bool)` then `keep &= freqs > low`."""
    function = next((a for a in ctx.ancestors(last) if isinstance(a, cst.FunctionDef)), None)
    if function is None:
        return False
    found = False
    for node in walk(function.body):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name) and target.target.value == name:
                    if not _static_host_mask(ctx, node.value, bindings, depth):
                        return False
                    found = True
                elif any(isinstance(n, cst.Name) and n.value == name for n in walk(target.target)):
                    return False
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            if isinstance(node.target, cst.Name) and node.target.value == name:
                value = node.value
                if value is None:
                    continue
                if not (
                    ctx.value_kind(value).is_host
                    or _run_setting(ctx, value)
                    or _static_host_mask(ctx, value, bindings, depth)
                ):
                    return False
        elif isinstance(node, (cst.For, cst.NamedExpr, cst.WithItem)):
            targets = node.target if not isinstance(node, cst.WithItem) else node.asname
            if targets is not None and any(
                isinstance(n, cst.Name) and n.value == name for n in walk(targets)
            ):
                return False
    return found


def _constructed_mask(ctx: FileContext, mask: cst.BaseExpression, where: cst.CSTNode) -> bool:
    """Whether a host mask is an attribute its class sets in `__init__` and never sets or
    changes in place anywhere else (`self.mask = self.correlated_mask(batch_size)`): built
    once, its count is the same in every step, so the device sees one fixed index list."""
    name = self_attribute_name(mask)
    if name is None:
        return False
    cls: cst.CSTNode | None = ctx.parent(where)
    while cls is not None and not isinstance(cls, cst.ClassDef):
        cls = ctx.parent(cls)
    if cls is None:
        return False
    built = False
    for node in walk(cls):
        if not isinstance(node, cst.FunctionDef):
            continue
        if any(_writes_attribute(inner, name) for inner in walk(node.body)):
            if node.name.value != "__init__":
                return False
            built = True
    return built


def _writes_attribute(node: cst.CSTNode, name: str) -> bool:
    """`self.name = ...`, `self.name[i] = ...`, `self.name += ...`, `self.name.fill_(...)`,
    `setattr(self, "name", ...)`."""
    targets: list[cst.BaseExpression] = []
    if isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
    elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
        targets = [node.target]
    elif isinstance(node, cst.Call):
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value.endswith("_")
            and self_attribute_name(func.value) == name
        ):
            return True
        if isinstance(func, cst.Name) and func.value == "setattr" and len(node.args) > 1:
            label = node.args[1].value
            return isinstance(label, cst.SimpleString) and label.value[1:-1] == name
        return False
    for target in targets:
        elements = target.elements if isinstance(target, (cst.Tuple, cst.List)) else [target]
        for element in elements:
            inner = element.value if isinstance(element, cst.Element) else element
            if isinstance(inner, cst.Subscript):
                inner = inner.value
            if self_attribute_name(inner) == name:
                return True
    return False


def _dropped_copy_statement(ctx: FileContext, node: cst.Subscript) -> bool:
    """`x[mask][:, i] = x[mask][:, j]`: every target writes into the copy a selection makes,
    so the statement changes nothing and XLA's lazy execution never compiles or runs what
    it computes (asked only of a host mask, whose count torch takes on the CPU: a device
    mask's count is read from the device as the selection is traced)."""
    line = ctx.enclosing_statement(node)
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return False
    statement = line.body[0]
    if not isinstance(statement, cst.Assign):
        return False
    return all(
        isinstance(t.target, cst.Subscript) and isinstance(t.target.value, cst.Subscript)
        for t in statement.targets
    )
