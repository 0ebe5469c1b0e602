"""The size arguments of graph libraries and `one_hot`: which argument gives a call's output
size, and which index tensor the library reads the size from when it is missing.

Shared by TPU111 (a missing size: the library reads it from the index's values) and TPU205
(a size given as a device value: the library converts it to an int). One table, so a library
function added here is known to both.
"""

from __future__ import annotations


class Sized:
    """A library function that reads an output size from its index tensor's values when the
    size argument is missing: `size` (keyword, position) is the argument that prevents the
    read, `index` (keyword, position) the tensor read, `others` arguments that also give the
    size (`out=` of torch_scatter), `needs_index`: the read happens only when the index is
    passed (PyG's pooling without `batch` sums the whole tensor)."""

    def __init__(
        self,
        size: tuple[str, int],
        index: tuple[str, int],
        others: tuple[tuple[str, int], ...] = (),
        needs_index: bool = False,
        also: tuple[tuple[str, int], ...] = (),
        read: str | None = None,
    ) -> None:
        self.size = size
        self.index = index
        self.others = others
        self.needs_index = needs_index
        self.also = also  # further sizes read when missing (`to_dense_batch`'s batch size)
        # what the library reads, when it is not `int(<index>.max()) + 1` (`{index}`: the
        # index argument's source)
        self.read = read


# torch_scatter 2.1 (scatter.py, composite/*.py): `size[dim] = int(index.max()) + 1` when
# `dim_size` is None and no `out` is given.
_SCATTER = Sized(("dim_size", 4), ("index", 1), others=(("out", 3),))
TORCH_SCATTER = {
    "scatter": _SCATTER,
    "scatter_sum": _SCATTER,
    "scatter_add": _SCATTER,
    "scatter_mul": _SCATTER,
    "scatter_mean": _SCATTER,
    "scatter_min": _SCATTER,
    "scatter_max": _SCATTER,
    "scatter_std": _SCATTER,
    "scatter_logsumexp": _SCATTER,
    "scatter_softmax": Sized(("dim_size", 3), ("index", 1)),
    "scatter_log_softmax": Sized(("dim_size", 4), ("index", 1)),
}
# PyTorch Geometric 2.x: utils/_scatter.py `dim_size = int(index.max()) + 1`, pooling
# (nn/pool/glob.py) passes `size` on as that `dim_size` when a `batch` is given,
# utils/num_nodes.py `maybe_num_nodes` reads `int(edge_index.max()) + 1`, `to_dense_batch`
# reads the batch size and the largest graph's node count. `sort_edge_index` (utils/
# _sort_edge_index.py) and `add_self_loops` (utils/loop.py) size their sort key and their
# loops from `maybe_num_nodes(edge_index, num_nodes)`; `to_dense_adj` (utils/_to_dense_adj.py)
# reads `int(batch.max()) + 1` without `batch_size` (`int(edge_index.max()) + 1` first when
# no `batch` is given) and `int(num_nodes.max())` without `max_num_nodes`.
PYG = {
    "scatter": Sized(("dim_size", 3), ("index", 1)),
    "global_add_pool": Sized(("size", 2), ("batch", 1), needs_index=True),
    "global_mean_pool": Sized(("size", 2), ("batch", 1), needs_index=True),
    "global_max_pool": Sized(("size", 2), ("batch", 1), needs_index=True),
    "softmax": Sized(("num_nodes", 3), ("index", 1), others=(("ptr", 2),), needs_index=True),
    "degree": Sized(("num_nodes", 1), ("index", 0)),
    "to_dense_batch": Sized(
        ("max_num_nodes", 3), ("batch", 1), needs_index=True, also=(("batch_size", 4),)
    ),
    "sort_edge_index": Sized(("num_nodes", 2), ("edge_index", 0)),
    "add_self_loops": Sized(("num_nodes", 3), ("edge_index", 0)),
    "to_dense_adj": Sized(
        ("max_num_nodes", 3),
        ("edge_index", 0),
        also=(("batch_size", 4),),
        read="the batch size and the largest graph's node count (`int(... .max())`)",
    ),
}
# torch.nn.functional.one_hot: `num_classes=-1` (the default) is `self.max().item() + 1`
# (aten/src/ATen/native/Onehot.cpp).
ONE_HOT = Sized(("num_classes", 1), ("tensor", 0))


def sized_call(qualified: str) -> Sized | None:
    """The size table's entry for a fully qualified callee (`torch_scatter.scatter_mean`,
    `torch_geometric.utils.scatter`, `torch.nn.functional.one_hot`), or None."""
    root, _, last = qualified.rpartition(".")
    package = root.split(".", 1)[0]
    if package == "torch_scatter":
        return TORCH_SCATTER.get(last)
    if package == "torch_geometric":
        return PYG.get(last)
    if qualified == "torch.nn.functional.one_hot":
        return ONE_HOT
    return None


def _size_names(table: dict[str, Sized]) -> frozenset[str]:
    return frozenset(name for sized in table.values() for name, _ in (sized.size, *sized.also))


# Per library, every keyword that gives an output size in some function of the table.
SIZE_KEYWORDS = {
    "torch_scatter": _size_names(TORCH_SCATTER),
    "torch_geometric": _size_names(PYG),
}
# The last names of the sized calls (TPU111's screen).
SIZED_NAMES = frozenset({*TORCH_SCATTER, *PYG, "one_hot"})


class Shaped:
    """A library function whose output size depends on the values of its input: `subject`
    (keyword, position) is the tensor whose values decide it, `how` says how the library
    picks the kept entries (for the message), `advice` what keeps the shape static."""

    def __init__(self, subject: tuple[str, int], how: str, advice: str) -> None:
        self.subject = subject
        self.how = how
        self.advice = advice


_MASK_EDGES = "keep every edge and zero the dropped ones' weights with a mask"
_NO_DUPLICATES = (
    "build the edge list without duplicates in the data pipeline, or keep the duplicates "
    "and mask them"
)
_SEARCH = (
    "build the graph in the data pipeline (a dataset transform), or search a fixed number "
    "of neighbours densely (`torch.cdist` and `topk`, masking those past the cutoff)"
)
# torch_cluster 1.6 (torch_cluster/radius.py, knn.py): `radius` returns every pair within
# `r` (the count follows the positions), `knn` keeps the found neighbours with
# `masked_select(col != -1)` (csrc/cuda/knn_cuda.cu), `knn_graph(loop=False)` then drops
# the self-pairs by `row[mask]`; PyG's `torch_geometric.nn.radius_graph` / `knn_graph` /
# `radius` / `knn` call them.
_NEIGHBOURS = {
    "radius_graph": Shaped(("x", 0), "returns every pair closer than `r`", _SEARCH),
    "radius": Shaped(("x", 0), "returns every pair closer than `r`", _SEARCH),
    "knn_graph": Shaped(("x", 0), "keeps the neighbours found by a mask", _SEARCH),
    "knn": Shaped(("x", 0), "keeps the neighbours found by a mask", _SEARCH),
}
# PyTorch Geometric 2.x utils: `dense_to_sparse` (sparse.py) is `adj.nonzero()`;
# `remove_self_loops` and `add_remaining_self_loops` (loop.py) select `edge_index[:, mask]`
# with `mask = edge_index[0] != edge_index[1]`; `coalesce` (_coalesce.py) drops duplicates
# by `edge_index[:, mask]` after `if mask.all()` (a host bool); `to_undirected`
# (undirected.py) appends the reversed edges and coalesces; `subgraph` and `k_hop_subgraph`
# (_subgraph.py) keep `edge_index[:, edge_mask]`.
PYG_SHAPED = {
    "dense_to_sparse": Shaped(
        ("adj", 0),
        "keeps the adjacency's non-zero entries (`adj.nonzero()`)",
        "keep the dense adjacency and mask it, or pad the edge list to a fixed maximum",
    ),
    "remove_self_loops": Shaped(
        ("edge_index", 0), "drops the self-loops by a boolean mask", _MASK_EDGES
    ),
    "add_remaining_self_loops": Shaped(
        ("edge_index", 0), "drops the existing self-loops by a boolean mask", _MASK_EDGES
    ),
    "coalesce": Shaped(
        ("edge_index", 0), "drops duplicate edges by a boolean mask", _NO_DUPLICATES
    ),
    "to_undirected": Shaped(
        ("edge_index", 0),
        "adds the reversed edges and drops duplicates (`coalesce`)",
        _NO_DUPLICATES,
    ),
    "subgraph": Shaped(
        ("edge_index", 1), "keeps the edges inside the subset by a boolean mask", _MASK_EDGES
    ),
    "k_hop_subgraph": Shaped(
        ("edge_index", 2), "keeps the edges inside the subset by a boolean mask", _MASK_EDGES
    ),
    **_NEIGHBOURS,
}
# torch_sparse 0.6 (coalesce.py -> storage.py `SparseStorage.coalesce`): `row()[mask]` after
# `if mask.all()`.
TORCH_SPARSE_SHAPED = {
    "coalesce": Shaped(("index", 0), "drops duplicate entries by a boolean mask", _NO_DUPLICATES)
}


def shaped_call(qualified: str) -> Shaped | None:
    """The data-dependent-size table's entry for a fully qualified callee
    (`torch_geometric.utils.dense_to_sparse`, `torch_sparse.coalesce`,
    `torch_cluster.radius_graph`), or None."""
    parts = qualified.split(".")
    package, last = parts[0], parts[-1]
    if package == "torch_geometric" and len(parts) > 2 and parts[1] in ("utils", "nn"):
        return PYG_SHAPED.get(last)
    if package == "torch_sparse":
        return TORCH_SPARSE_SHAPED.get(last)
    if package == "torch_cluster":
        return _NEIGHBOURS.get(last)
    return None


# The last names of the data-dependent library calls (TPU201's screen).
SHAPED_NAMES = frozenset({*PYG_SHAPED, *TORCH_SPARSE_SHAPED})
