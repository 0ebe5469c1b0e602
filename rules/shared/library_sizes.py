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
    ) -> None:
        self.size = size
        self.index = index
        self.others = others
        self.needs_index = needs_index
        self.also = also  # further sizes read when missing (`to_dense_batch`'s batch size)


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
# reads the batch size and the largest graph's node count.
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
