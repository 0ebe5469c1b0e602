"""TPU308 ragged-graph-collate."""

from __future__ import annotations

import re

import libcst as cst

from tpulint.datatypes.diagnostics import Severity
from tpulint.rule_api.rule import Invalid, Valid

from ..shared.matchers import walk
from .helpers import _callee_name, _DataRule

_COLLATE = re.compile(r"(^_?collate(_fn|_batch)?$|collate_fn$|^_?\w*collate\w*$)", re.IGNORECASE)
# How a graph batch records which sample each node belongs to, or shifts edge indices.
_SEGMENT_CALLS = frozenset({"repeat_interleave", "cumsum"})


class RaggedGraphCollate(_DataRule):
    """
    ## What it does
    Finds collate functions that batch graphs (or other samples of varying size) by
    concatenating them: `torch.cat([sample[k] for sample in batch])` together with the
    bookkeeping of graph batching (a node-to-sample index built with `repeat_interleave`,
    edge-index offsets from a `cumsum` of the samples' sizes). The concatenated dimension is
    the total number of nodes or edges of the batch, which differs from batch to batch.

    ## Why is this bad on TPU?
    Every batch brings new node and edge counts, so every step has new input shapes and XLA
    compiles the whole step again (forward, backward and optimizer), nearly every step. On a
    GPU graph batching costs nothing; on a TPU it must be padded to a fixed budget: pad each
    batch to a fixed number of nodes and edges (dummy nodes in a padding graph, masked out of
    the loss), as JAX and TPU graph libraries do (jraph's `pad_with_graphs`).

    ## Example
    ```python
    import torch


    def collate_graphs(batch):
        out = {k: torch.cat([g[k] for g in batch]) for k in ("x", "pos")}
        counts = torch.tensor([g["x"].shape[0] for g in batch])
        out["batch"] = torch.repeat_interleave(torch.arange(len(batch)), counts)
        return out
    ```

    ## Use instead
    ```python
    import torch

    MAX_NODES = 512


    def collate_graphs(batch):
        x = torch.zeros(MAX_NODES, batch[0]["x"].shape[1])
        owner = torch.full((MAX_NODES,), len(batch))
        start = 0
        for i, g in enumerate(batch):
            n = g["x"].shape[0]
            x[start : start + n] = g["x"]
            owner[start : start + n] = i
            start += n
        return {"x": x, "batch": owner, "node_mask": owner < len(batch)}
    ```

    ## Fix safety
    No automatic fix: the node and edge budget, and the masking of padding nodes, are the
    model's decision.

    ## References
    - [torch_xla: recompilation causes (dynamic shapes)](https://github.com/pytorch/xla/blob/master/docs/source/perf/recompilation.md)
    - [jraph: padding graphs to a fixed size (`pad_with_graphs`)](https://jraph.readthedocs.io/en/latest/api.html#jraph.pad_with_graphs)

    ## Status
    Preview (new in issue 21): from one miss of the sci1 batch (a molecule collate that
    concatenates atoms and neighbour pairs of each sample). No fresh batch has been read
    with it yet.
    """

    code = "TPU308"
    name = "ragged-graph-collate"
    summary = "A collate function that concatenates graphs of varying size (a new shape per batch)"
    severity = Severity.WARNING
    preview = True
    requires = ("cat(",)

    VALID = (
        # Samples of one size stacked: a fixed shape.
        Valid(
            "import torch\n\n\ndef collate(batch):\n"
            "    return torch.stack([b['image'] for b in batch])\n"
        ),
        # Concatenation without graph bookkeeping (fixed-size chunks).
        Valid(
            "import torch\n\n\ndef collate_fn(batch):\n"
            "    return torch.cat([b['chunk'] for b in batch])\n"
        ),
        # Not a collate function.
        Valid(
            "import torch\n\n\ndef merge_outputs(outs):\n"
            "    y = torch.cat([o['y'] for o in outs])\n"
            "    return y, torch.cumsum(y, 0)\n"
        ),
    )
    INVALID = (
        Invalid(
            "import torch\n\n\ndef collate_molecules(batch):\n"
            "    out = {k: torch.cat([m[k] for m in batch]) for k in batch[0]}\n"
            "    offsets = torch.cumsum(out['n_atoms'], dim=0)\n"
            "    out['owner'] = torch.repeat_interleave(torch.arange(len(batch)), out['n_atoms'])\n"
            "    return out, offsets\n",
            line=5,
            message="a new shape per batch",
        ),
    )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._skip or not _COLLATE.search(node.name.value):
            return
        concat = None
        segments = False
        for inner in walk(node.body):
            if not isinstance(inner, cst.Call):
                continue
            name = _callee_name(inner)
            if name == "cat" and concat is None and _over_samples(inner):
                concat = inner
            elif name in _SEGMENT_CALLS:
                segments = True
        if concat is None or not segments:
            return
        self.report(
            concat,
            f"`{node.name.value}` batches samples of varying size by concatenating them (with a "
            "node-to-sample index or offsets): the concatenated dimension is the batch's total "
            "node or edge count, a new shape per batch, so XLA compiles the step again nearly "
            "every step; pad each batch to a fixed node and edge budget and mask the padding",
        )


def _over_samples(call: cst.Call) -> bool:
    """`torch.cat([s[k] for s in batch])`: a comprehension over the batch's samples."""
    if not call.args:
        return False
    first = call.args[0].value
    return isinstance(first, (cst.ListComp, cst.GeneratorExp))
