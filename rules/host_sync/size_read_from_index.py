"""TPU111 size-read-from-index."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import get_arg
from tpulint.analysis.project import FileView
from tpulint.analysis.values import CPU, DEVICE, ValueKind
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.library_sizes import SIZED_NAMES, sized_call
from ..shared.matchers import source_of
from .helpers import _HEAD, in_exception_path, quiet


class SizeReadFromIndex(Rule):
    """
    ## What it does
    Finds calls in code that runs every step that leave out the size of their result, so
    that the library reads it from the values of an index tensor: `torch_scatter`'s
    `scatter` and `scatter_*` without `dim_size` (or `out=`), PyTorch Geometric's
    `scatter` without `dim_size`, `global_add_pool` / `global_mean_pool` /
    `global_max_pool` with a `batch` but no `size`, `softmax` with an index but neither
    `ptr` nor `num_nodes`, `degree` without `num_nodes`, `to_dense_batch` without
    `max_num_nodes` and `batch_size`, `sort_edge_index` and `add_self_loops` without
    `num_nodes`, `to_dense_adj` without `max_num_nodes` and `batch_size`, and
    `torch.nn.functional.one_hot` without
    `num_classes`, also when the function is kept in an attribute of the class and called
    through it (`self.reduce = scatter_mean`, then `self.reduce(x, index, dim=0)`), also
    when the constructor picks between such functions in its branches through a local name
    (`readout = global_add_pool` in one, `global_mean_pool` in another, then `self.readout =
    readout`). Indices that are CPU tensors or host values are not reported.

    ## Why is this bad on TPU?
    Without the size the library computes it as `int(index.max()) + 1` (`one_hot`:
    `self.max().item() + 1`): the pending XLA graph is cut and run and the maximum copied
    to the host, a sync on every call. The result's shape then follows the data (the
    largest graph id, node or class present in this batch), so XLA also compiles a new
    graph whenever that maximum changes. A model that pools or reduces per graph with
    `scatter` pays this several times per step.

    ## Example
    ```python
    import lightning as L
    from torch_scatter import scatter


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            per_atom = self.net(batch.x)
            per_graph = scatter(per_atom, batch.batch, dim=0, reduce="mean")
            return (per_graph - batch.y).pow(2).mean()
    ```

    ## Use instead
    ```python
    import lightning as L
    from torch_scatter import scatter


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            per_atom = self.net(batch.x)
            per_graph = scatter(
                per_atom, batch.batch, dim=0, dim_size=batch.num_graphs, reduce="mean"
            )
            return (per_graph - batch.y).pow(2).mean()
    ```

    Pass the size the code already knows as a Python number: the number of graphs of the
    batch (`batch.num_graphs`, the batch size of a padded batch), the number of nodes
    (`x.size(0)`), the number of classes. With batches padded to a fixed number of graphs
    and nodes, the size is the same every step and the graph compiles once.

    ## Fix safety
    No fix: the right size is a fact about the data that the call does not show.

    ## References
    - [torch_scatter source: `scatter_sum` sizes its output from `index.max()`](https://github.com/rusty1s/pytorch_scatter/blob/master/torch_scatter/scatter.py)
    - [PyTorch Geometric source: `utils.scatter`](https://github.com/pyg-team/pytorch_geometric/blob/master/torch_geometric/utils/_scatter.py)
    - [PyG source: `maybe_num_nodes`](https://github.com/pyg-team/pytorch_geometric/blob/master/torch_geometric/utils/num_nodes.py)
      (`degree`, `sort_edge_index`, `add_self_loops`: `int(edge_index.max()) + 1`)
    - [PyG source: `to_dense_adj`](https://github.com/pyg-team/pytorch_geometric/blob/master/torch_geometric/utils/_to_dense_adj.py)
      (the batch size and `int(num_nodes.max())`)
    - [PyTorch: `torch.nn.functional.one_hot` (`num_classes=-1` infers the count)](https://pytorch.org/docs/stable/generated/torch.nn.functional.one_hot.html)
    - [torch_xla: recompilation causes](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)

    ## Status
    Stable (new in issue 21): the read is in the library's own code whenever the size is
    missing, so every call in code that runs every step with a device index syncs by
    construction. It comes from the misses of the fifth held-out pair (graph losses and
    readouts of a crystal model); PyG's edge-list helpers (`sort_edge_index`,
    `add_self_loops`, `to_dense_adj`) from the misses of a molecule-diffusion model read
    later (their node count taken from the edges every step). `to_dense_adj` given both
    sizes still compares the edges with `max_num_nodes` on the host; that read is not
    reported.
    """

    code = "TPU111"
    name = "size-read-from-index"
    summary = "`scatter` / PyG pooling / `one_hot` without their size argument in hot code"
    hot_only = True
    fix_applicability = Applicability.DISPLAY_ONLY
    requires = (
        "scatter",
        "pool",
        "softmax",
        "degree",
        "to_dense_batch",
        "one_hot",
        "sort_edge_index",
        "add_self_loops",
        "to_dense_adj",
    )
    _CALLEES = SIZED_NAMES

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        if not view.has_hot_code:
            return False
        syntax = view.module.syntax
        if syntax is None or not syntax.calls.isdisjoint(cls._CALLEES):
            return True
        # `self.reduce = scatter_mean`, then `self.reduce(x, index)` (`ctx.qualify_callee`)
        return any(
            ref.rsplit(".", 1)[-1] in cls._CALLEES
            for attributes in view.module.scope.attribute_refs.values()
            for refs in attributes.values()
            for ref in refs
        )

    VALID = (
        # The size is given: no read.
        Valid(
            "from torch_scatter import scatter, scatter_max\n"
            + _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            "        h = self(batch)\n"
            "        a = scatter(h, batch.batch, dim=0, dim_size=batch.num_graphs)\n"
            "        b = scatter_max(h, batch.batch, 0, None, batch.num_graphs)[0]\n"
            "        c = torch.nn.functional.one_hot(batch.y, num_classes=10)\n"
            "        return (a + b).sum() + c.sum()\n"
        ),
        # Pooling without a batch sums the whole tensor; `out=` gives the size.
        Valid(
            "from torch_geometric.nn import global_mean_pool\n"
            "from torch_scatter import scatter_add\n"
            + _HEAD
            + "    def forward(self, x, index, out):\n"
            "        return global_mean_pool(x, None), scatter_add(x, index, out=out)\n"
        ),
        # Not every step: data preparation.
        Valid(
            "import torch.nn.functional as F\n" + _HEAD + "    def setup(self, stage):\n"
            "        self.targets = F.one_hot(self.labels)\n"
        ),
        # A CPU tensor built from Python data.
        Valid(
            "import torch.nn.functional as F\n"
            + _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            "        codes = F.one_hot(torch.tensor([0, 2, 1]))\n"
            "        return self(batch, codes)\n"
        ),
        # The attribute picks between a sized pooling and a readout of another library: which
        # one runs is the configuration's, not shown.
        Valid(
            "from torch_geometric.nn import global_mean_pool\n"
            + _HEAD
            + "    def __init__(self, readout):\n"
            "        super().__init__()\n"
            "        self.readout = global_mean_pool if readout == 'mean' else None\n"
            "        if readout == 'sum':\n"
            "            self.readout = torch.sum\n"
            "    def forward(self, graph):\n"
            "        return self.readout(graph.h, graph.batch)\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return self(batch).sum()\n"
        ),
        # Another library's `scatter` (torch.Tensor.scatter takes its size from `self`).
        Valid(
            _HEAD + "    def training_step(self, batch, batch_idx):\n"
            "        out = torch.zeros(4, 3).scatter(0, batch.index, batch.x)\n"
            "        return out.sum()\n"
        ),
        # Edge-list helpers told the node count.
        Valid(
            "from torch import nn\n"
            "from torch_geometric.utils import add_self_loops, sort_edge_index\n\n\n"
            "class Layer(nn.Module):\n"
            "    def forward(self, h, edge_index):\n"
            "        n = h.size(0)\n"
            "        edge_index, _ = add_self_loops(edge_index, num_nodes=n)\n"
            "        edge_index = sort_edge_index(edge_index, None, n)[0]\n"
            "        return h[edge_index[0]]\n"
        ),
    )
    INVALID = (
        # Edge-list helpers left to find the node count (and the dense batch its sizes).
        Invalid(
            "from torch import nn\n"
            "from torch_geometric.utils import add_self_loops, sort_edge_index, to_dense_adj\n"
            "\n\n"
            "class Layer(nn.Module):\n"
            "    def forward(self, h, edge_index, graph_id):\n"
            "        edge_index = sort_edge_index(edge_index, sort_by_row=False)\n"
            "        looped, _ = add_self_loops(edge_index)\n"
            "        adj = to_dense_adj(edge_index, graph_id, max_num_nodes=32)\n"
            "        return h[looped[0]].sum() + adj.sum()\n",
            count=3,
        ),
        Invalid(
            "from torch_scatter import scatter\n"
            + _HEAD
            + "    def training_step(self, batch, batch_idx):\n"
            "        h = self(batch)\n"
            "        return scatter(h, batch.batch, dim=0, reduce='mean').mean()\n",
            line=9,
            message="reads `int(batch.batch.max()) + 1` on the host",
        ),
        # PyG pooling and softmax in a module's forward; one_hot of the targets.
        Invalid(
            "import torch.nn.functional as F\n"
            "from torch_geometric.nn import global_add_pool\n"
            "from torch_geometric.utils import softmax\n"
            "import torch_scatter\n" + _HEAD + "    def forward(self, x, edge_index, batch):\n"
            "        alpha = softmax(x[edge_index[0]], edge_index[1])\n"
            "        pooled = global_add_pool(x, batch)\n"
            "        total = torch_scatter.scatter_sum(alpha, edge_index[1], dim=0)\n"
            "        return pooled, total\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        target = F.one_hot(batch.y)\n"
            "        return (self(batch.x, batch.edge_index, batch.batch)[0] - target).sum()\n",
            count=4,
        ),
        # The library function kept in an attribute, called through it.
        Invalid(
            "from torch import nn\nfrom torch_scatter import scatter_mean\n\n\n"
            "class Pool(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.reduce = scatter_mean\n\n"
            "    def forward(self, h, segment):\n"
            "        return self.reduce(h, segment, dim=0)\n",
            line=11,
            message="`self.reduce` (`scatter_mean`) without `dim_size=`",
        ),
        # The pooling picked in the constructor's branches through a local name, kept in an
        # attribute, called in the forward of every step.
        Invalid(
            "from torch_geometric.nn import global_add_pool, global_mean_pool\n"
            + _HEAD
            + "    def __init__(self, summed=False):\n"
            "        super().__init__()\n"
            "        if summed:\n"
            "            readout = global_add_pool\n"
            "        else:\n"
            "            readout = global_mean_pool\n"
            "        self.readout = readout\n"
            "    def forward(self, graph):\n"
            "        return self.readout(graph.h, graph.batch)\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        return self(batch).sum()\n",
            line=15,
            message="`self.readout` (`global_add_pool` / `global_mean_pool`) without `size=`",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not ctx.in_hot_code:
            return
        # `self.pool(x, batch)`: one function, or several the class picks between in its
        # branches (`global_add_pool` / `global_mean_pool`) that all read the same size
        choices = ctx.callee_choices(node.func)
        if not choices:
            return
        table = [sized_call(choice) for choice in choices]
        sized = table[0]
        if sized is None or any(
            other is None
            or (other.size, other.index, other.others, other.also)
            != (sized.size, sized.index, sized.others, sized.also)
            for other in table[1:]
        ):
            return
        if any(arg.star for arg in node.args):
            return
        last = " / ".join(f"{choice.rpartition('.')[2]}" for choice in choices)
        index = get_arg(node, *sized.index)
        if index is None or _is_none(index.value):
            return
        if any(get_arg(node, *other) is not None for other in sized.others):
            return
        missing = [
            name
            for name, position in (sized.size, *sized.also)
            if _missing(get_arg(node, name, position), name)
        ]
        if not missing:
            return
        kind = ctx.value_kind(index.value)
        if kind.is_host or kind is CPU or kind not in (DEVICE, ValueKind.UNKNOWN):
            return
        if quiet(ctx, node) or in_exception_path(ctx, node):
            return
        tensor = source_of(ctx, index.value)
        if sized.read is not None:
            read = sized.read
        elif last == "one_hot":
            read = f"`{tensor}.max().item() + 1`"
        else:
            read = f"`int({tensor}.max()) + 1`"
        given = " and ".join(f"`{name}=`" for name in missing)
        callee = source_of(ctx, node.func)
        names = " / ".join(f"`{choice.rpartition('.')[2]}`" for choice in choices)
        called = f"`{last}`" if callee.endswith(last) else f"`{callee}` ({names})"
        self.report(
            node,
            f"{called} without {given} in {ctx.hot_reason} reads {read} on the host: a sync "
            "every step, and an output shape that follows the data (a graph per size); "
            f"pass {given} (a Python number the code knows, fixed across batches)",
        )


def _missing(arg: cst.Arg | None, name: str) -> bool:
    """Whether a size argument is left to the library: absent, None, or `num_classes=-1`."""
    if arg is None or _is_none(arg.value):
        return True
    value = arg.value
    return (
        name == "num_classes"
        and isinstance(value, cst.UnaryOperation)
        and isinstance(value.operator, cst.Minus)
        and isinstance(value.expression, cst.Integer)
        and value.expression.value == "1"
    )


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"
