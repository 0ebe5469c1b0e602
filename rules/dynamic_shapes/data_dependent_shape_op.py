"""TPU201 data-dependent-shape-op."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import get_arg
from tpulint.analysis.project import FileView
from tpulint.analysis.values import CPU, DEVICE, ValueKind
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..rewrite.nonzero import shape_op_fix
from ..shared.library_sizes import SHAPED_NAMES, shaped_call
from ..shared.matchers import source_of
from ..shared.tensors import (
    TrackingRule,
    is_torch_tensor,
    keyword,
    method_name,
    positional,
    receiver,
    torch_name,
)
from .helpers import _HEAD, _MOD, _maybe_device, _quiet

_SHAPE_OPS = {
    "nonzero": "nonzero",
    "argwhere": "argwhere",
    "unique": "unique",
    "unique_consecutive": "unique_consecutive",
    "masked_select": "masked_select",
    "bincount": "bincount",
}


class DataDependentShapeOp(TrackingRule, Rule):
    """
    ## What it does
    Finds operations whose output shape depends on the values of their input, in code that
    runs every step: `nonzero` (method and `torch.nonzero`), `argwhere`, `unique`,
    `unique_consecutive`, `masked_select`, `bincount` (method and `torch.bincount`, with or
    without `minlength`), one-argument `torch.where(cond)`, and `repeat_interleave` with a
    tensor of repeats. Also the graph-library functions built on
    them: PyTorch Geometric's `dense_to_sparse` (`nonzero`), `remove_self_loops` and
    `add_remaining_self_loops` (a boolean select of the edges), `coalesce` and
    `to_undirected` (duplicates dropped by a boolean mask), `subgraph` and
    `k_hop_subgraph`, `torch_sparse.coalesce`, and the neighbour searches `radius_graph`,
    `radius`, `knn_graph` and `knn` (torch_cluster's, or PyG's wrappers of them), also when
    the function is kept in an attribute of the class and called through it. Calls on
    numpy arrays, pandas objects and CPU tensors built from Python data
    (`torch.tensor([...])`, also a module global bound once to one and never moved) are not
    reported.

    ## Why is this bad on TPU?
    XLA compiles graphs with static shapes. When the size of a result is only known after
    looking at the data, torch_xla has to execute the graph up to that point and copy the
    values to the host to learn it (a sync), then record and compile a new graph for every
    size that shows up. torch_xla's troubleshooting guide lists `nonzero` and masked
    indexing as the first cause of dynamic shapes. `bincount` returns `max(minlength,
    x.max() + 1)` counts, so its length follows the largest value even with `minlength`;
    torch_xla has no lowering for it and runs it on the CPU (a copy to the host and back).

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
    Count values in a known range `[0, n)` with a fixed-size sum instead of `bincount`:
    `torch.nn.functional.one_hot(x, n).sum(0)` or
    `torch.zeros(n, dtype=torch.long, device=x.device).scatter_add_(0, x, torch.ones_like(x))`.
    For graphs, build the edge list in the data pipeline (a dataset transform runs on the host,
    once per sample) and pad it to a fixed edge count, or keep a dense adjacency and mask it;
    a neighbour search of fixed size is `torch.cdist` with `topk`, masking the pairs past
    the cutoff. torch_cluster has no XLA kernels at all.

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
    counts kept as tensors, `masked_select`, `bincount`, `repeat_interleave`) are reported
    without a fix: rewriting them changes the shapes that the following code sees.

    ## References
    - [torch_xla troubleshooting: known performance caveats (dynamic shapes)](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    - [torch_xla: recompilation causes](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)
    - [torch_xla: dynamic shape support (experimental, bounded)](https://github.com/pytorch/xla/blob/master/docs/source/learn/dynamic_shape.md)
    - [PyTorch Geometric source: `dense_to_sparse` is `adj.nonzero()`](https://github.com/pyg-team/pytorch_geometric/blob/master/torch_geometric/utils/sparse.py)
    - [PyTorch Geometric source: `remove_self_loops` selects `edge_index[:, mask]`](https://github.com/pyg-team/pytorch_geometric/blob/master/torch_geometric/utils/loop.py)
    - [PyTorch Geometric source: `coalesce` drops duplicates by a mask after `mask.all()`](https://github.com/pyg-team/pytorch_geometric/blob/master/torch_geometric/utils/_coalesce.py)
    - [PyTorch Geometric source: `subgraph` keeps `edge_index[:, edge_mask]`](https://github.com/pyg-team/pytorch_geometric/blob/master/torch_geometric/utils/_subgraph.py)
    - [torch_sparse source: `SparseStorage.coalesce` selects `row()[mask]`](https://github.com/rusty1s/pytorch_sparse/blob/master/torch_sparse/storage.py)
    - [torch_cluster source: `knn` keeps `masked_select(col != -1)`](https://github.com/rusty1s/pytorch_cluster/blob/master/csrc/cuda/knn_cuda.cu)
    - [torch_cluster source: `radius_graph`](https://github.com/rusty1s/pytorch_cluster/blob/master/torch_cluster/radius.py)
    - [pytorch/xla#4511: `aten::bincount` and `unique` run on the CPU (output shape depends on the values)](https://github.com/pytorch/xla/issues/4511)
    """

    code = "TPU201"
    hot_only = True
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = "Keep the mask"
    name = "data-dependent-shape-op"
    summary = "`nonzero`, `unique`, `masked_select`, `bincount`, one-argument `where` in hot code"
    requires = (
        "nonzero",
        "argwhere",
        "unique",
        "masked_select",
        "bincount",
        "where(",
        "repeat_interleave",
        # graph libraries (`..shared.library_sizes.SHAPED_NAMES`)
        "dense_to_sparse",
        "self_loops",
        "coalesce",
        "to_undirected",
        "subgraph",
        "radius",
        "knn",
    )
    _CALLEES = frozenset({*_SHAPE_OPS, "where", "repeat_interleave", *SHAPED_NAMES})

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        syntax = view.module.syntax
        if syntax is None or not syntax.calls.isdisjoint(cls._CALLEES):
            return True
        # `self.search = radius_graph`, then `self.search(pos, r)` (`ctx.callee_choices`)
        return any(
            ref.rsplit(".", 1)[-1] in SHAPED_NAMES
            for attributes in view.module.scope.attribute_refs.values()
            for refs in attributes.values()
            for ref in refs
        )

    VALID = (
        # `torch.unique` of a module-level table built at import time without a device and
        # never moved: a host op on a CPU constant, the same result every call.
        Valid(
            "import lightning as L\nimport torch\n\nSLOTS = torch.tensor([4, 0, 2, 2, 1])\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        kinds = torch.unique(SLOTS)\n"
            "        return self.net(batch['x']).sum() * len(kinds)\n",
        ),
        # k-means initialisation of a codebook behind `if self.initialized: return`, which
        # the rest of the method sets: it runs once, on the first batch.
        Valid(
            "import torch\nfrom torch import nn\n\n\n"
            "def k_means(samples, k, iters=10):\n"
            "    means = samples[:k]\n"
            "    for _ in range(iters):\n"
            "        buckets = torch.cdist(samples, means).argmin(dim=1)\n"
            "        counts = torch.bincount(buckets, minlength=k)\n"
            "        means = means * counts[:, None]\n"
            "    return means\n\n\n"
            "class Codebook(nn.Module):\n"
            "    def __init__(self, k):\n"
            "        super().__init__()\n"
            "        self.k = k\n"
            "        self.register_buffer('initialized', torch.tensor([False]))\n"
            "        self.register_buffer('codes', torch.zeros(k, 8))\n\n"
            "    def _init_codes(self, x):\n"
            "        if self.initialized:\n"
            "            return\n"
            "        self.codes.data.copy_(k_means(x, self.k))\n"
            "        self.initialized.data.copy_(torch.tensor([True]))\n\n"
            "    def forward(self, x):\n"
            "        self._init_codes(x)\n"
            "        return self.codes[torch.cdist(x, self.codes).argmin(dim=1)]\n"
        ),
        # bincount of numpy arrays and of CPU tensors built from Python data (lengths).
        Valid(
            "import numpy as np\n" + _MOD + "    def forward(self, x, lengths):\n"
            "        hist = np.bincount(np.asarray(lengths))\n"
            "        per_len = torch.bincount(torch.tensor([len(s) for s in x]), minlength=8)\n"
            "        return hist, per_len\n"
        ),
        # A scipy sparse matrix made dense is a numpy array: numpy's `nonzero`, on the host.
        Valid(
            _MOD + "    def forward(self, x, graph):\n"
            "        adj = graph.adjacency().toarray()\n"
            "        rows, cols = adj.nonzero()\n"
            "        dense = graph.laplacian().todense()\n"
            "        return x * len(rows) + float(dense.nonzero()[0].size)\n"
        ),
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
        # A helper taking an int or a tensor of repeats, every call passing the int: its
        # tensor-only branches (which rebind the repeats) never run.
        Valid(
            "import torch\nfrom torch import nn\n\n\n"
            "def spread(groups, reps):\n"
            "    if isinstance(reps, torch.Tensor):\n"
            "        reps = torch.cat((groups.new_ones(1), reps))\n"
            "    return torch.repeat_interleave(groups, reps)\n\n\n"
            "class Head(nn.Module):\n"
            "    def forward(self, x, groups):\n"
            "        return x[spread(groups, 3)]\n"
        ),
        # Graph libraries: the neighbour graph built once per sample in a dataset transform
        # (not step code), a CPU tensor of Python numbers, an unrelated `coalesce`.
        Valid(
            "import torch\nfrom torch_geometric.nn import radius_graph\n\n\n"
            "class NeighbourGraph:\n"
            "    def __call__(self, data):\n"
            "        data.edge_index = radius_graph(data.pos, r=4.0)\n"
            "        return data\n\n\n"
            "class Head(torch.nn.Module):\n"
            "    def forward(self, h, edge_index):\n"
            "        corners = radius_graph(torch.tensor([[0.0, 0.0], [1.0, 1.0]]), 2.0)\n"
            "        return h[edge_index[0]].sum() + corners.sum()\n"
        ),
        Valid(
            "from torch import nn\n\n\n"
            "def coalesce(parts):\n"
            "    return parts[0]\n\n\n"
            "class Head(nn.Module):\n"
            "    def forward(self, h, edges):\n"
            "        return h[coalesce(edges)]\n"
        ),
    )
    INVALID = (
        # Graph libraries whose output size follows the data, in the forward of every step:
        # an adjacency made sparse, self-loops dropped, duplicates merged (torch_sparse), a
        # radius graph rebuilt from the positions (through the attribute it is kept in).
        Invalid(
            "import torch\nfrom torch import nn\n"
            "from torch_cluster import radius_graph\n"
            "from torch_geometric.utils import dense_to_sparse, remove_self_loops\n"
            "from torch_sparse import coalesce\n\n\n"
            "class Layer(nn.Module):\n"
            "    def __init__(self, cutoff):\n"
            "        super().__init__()\n"
            "        self.cutoff = cutoff\n"
            "        self.neighbours = radius_graph\n\n"
            "    def forward(self, h, pos, graph_id, bonds, bond_types):\n"
            "        near = self.neighbours(pos, self.cutoff, graph_id)\n"
            "        same = (graph_id[:, None] == graph_id[None, :]).long()\n"
            "        full, _ = dense_to_sparse(same)\n"
            "        full, _ = remove_self_loops(full)\n"
            "        edges = torch.cat([full, bonds], dim=1)\n"
            "        n = h.size(0)\n"
            "        edges, types = coalesce(index=edges, value=bond_types, m=n, n=n)\n"
            "        return h[near[0]].sum() + h[edges[0]].sum() + types.sum()\n",
            count=4,
            message="its output size depends on the values of",
        ),
        # bincount: the number of bins follows the largest value, `minlength` or not.
        Invalid(
            _MOD + "    def forward(self, pred, target):\n"
            "        cells = target.flatten() * 2 + pred.flatten()\n"
            "        confusion = torch.bincount(cells, minlength=4)\n"
            "        freq = target.flatten().bincount()\n"
            "        return confusion[3] / freq.sum()\n",
            count=2,
            message="has a data-dependent output shape",
        ),
        # Per-sample indices of the set labels, in a loop over the batch.
        Invalid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        x, labels = batch\n"
            "        picked = []\n"
            "        for n in range(labels.size(0)):\n"
            "            picked.append(torch.where(labels[n] == 1)[0])\n"
            "        for row in labels:\n"
            "            picked.append(row.nonzero().flatten())\n"
            "        return self(x, picked)\n",
            count=2,
            message="in training_step",
        ),
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
        if self._library_call(node):
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

    def _library_call(self, node: cst.Call) -> bool:
        """A graph library's function whose output size follows its input's values
        (`dense_to_sparse`, `remove_self_loops`, `coalesce`, `radius_graph`, ...), called
        directly or through an attribute the class assigns it: reported when the tensor it
        reads may be on the device. Whether the callee is such a function."""
        ctx = self.ctx
        choices = ctx.callee_choices(node.func)
        if not choices:
            return False
        table = [shaped_call(choice) for choice in choices]
        shaped = table[0]
        if shaped is None:
            return False
        if any(other is None or other.subject != shaped.subject for other in table[1:]):
            return True
        table = [other for other in table if other is not None]
        if any(arg.star for arg in node.args):
            return True
        subject = get_arg(node, *shaped.subject)
        if subject is None:
            return True
        kind = ctx.value_kind(subject.value)
        if kind.is_host or kind is CPU or not _maybe_device(kind):
            return True
        if _quiet(ctx, node):
            return True
        names = " / ".join(f"`{choice.rpartition('.')[2]}`" for choice in choices)
        callee = source_of(ctx, node.func)
        last = choices[-1].rpartition(".")[2]
        called = f"`{callee}`" if callee.endswith(last) else f"`{callee}` ({names})"
        how = shaped.how if all(other.how == shaped.how for other in table) else "searches"
        self.report(
            node,
            f"{called} in {ctx.hot_reason} {how}: its output size depends on the values of "
            f"`{source_of(ctx, subject.value)}`, so XLA syncs to learn it and compiles a graph "
            f"per size; {shaped.advice}",
        )
        return True

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
            "bincount": "count into a fixed number of bins "
            "(`torch.nn.functional.one_hot(x, n).sum(0)`, `scatter_add_` into `zeros(n)`)",
            "where": "use the three-argument `torch.where(cond, x, y)`",
            "repeat_interleave": "expand to a fixed maximum length and mask",
        }[op]
        self.report(
            node,
            f"`{source_of(ctx, node)}` in {ctx.hot_reason} has a data-dependent output shape: "
            f"XLA syncs to learn it and compiles a graph per size; {advice}",
            fix=shape_op_fix(ctx, self.bindings, node, op),
        )
