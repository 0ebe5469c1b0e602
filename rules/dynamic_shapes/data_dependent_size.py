"""TPU205 data-dependent-size."""

from __future__ import annotations

import ast

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.hot_code import index_elements, is_int_literal
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.library_sizes import SIZE_KEYWORDS
from ..shared.matchers import source_of
from ..shared.tensors import TrackingRule, method_name, positional, torch_name, value_size
from .helpers import _MOD, _quiet

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


# The size arguments of graph libraries and `one_hot` (TPU111 reports them missing): given
# as a device value (`dim_size=batch.max() + 1`), the library converts it to an int.
# The last names of the calls `visit_Call` reads sizes from, and the keywords it reads.
_SIZED_CALLS = _SIZE_FACTORIES | _SIZE_METHODS | {"linspace", "pad", "one_hot"}
_LIBRARY_KEYWORDS = frozenset().union(*SIZE_KEYWORDS.values(), {"num_classes"})


def _library_size_keywords(ctx: FileContext, node: cst.Call) -> frozenset[str] | None:
    qualified = ctx.qualify(node.func)
    if qualified is None:
        return None
    if qualified == "torch.nn.functional.one_hot":
        return frozenset({"num_classes"})
    return SIZE_KEYWORDS.get(qualified.split(".", 1)[0])


def _einops_call(ctx: FileContext, node: cst.Call) -> bool:
    """`einops.repeat(...)`, `rearrange(...)`: a function of einops, no tensor method."""
    qualified = ctx.qualify(node.func)
    return qualified is not None and qualified.split(".", 1)[0] == "einops"


class DataDependentSize(TrackingRule, Rule):
    """
    ## What it does
    Finds sizes read from the values of a device tensor, in code that runs every step:
    `torch.arange(lengths.max())`, `torch.zeros(n.sum(), d)` (or a tuple of sizes,
    `torch.zeros((ids.max() + 1, d))`), `x[:, :lengths.max()]`,
    `x.new_zeros(int(lengths.max()))`, Python's `max`/`min`/`sum` of one device tensor
    (`torch.zeros(max(ids) + 1, d)`: one host read per element; of a list of numbers it is
    a host value), `F.pad(x, (0, n))`, einops' axis sizes (the keywords'
    values of `einops.repeat(x, "b -> (b s)", s=n)`, not the tensor), and names bound to such values
    (`max_len = lengths.max().item()` or `n = torch.max(index) + 1` used later as a size,
    `shape = (b, words.max() + 1)` spread into `x.new_zeros(*shape)`; a value of unknown
    place counts when torch made it, `k = (torch.sum(keep, -1) * r).int()` then
    `int(torch.max(k))`, or its name says it is a length, count or mask), an element of a device
    tensor used as a size or slice bound (`x[i, :, starts[i]:starts[i] + n]` with `starts` a
    device tensor: one read per element), and the size arguments of
    graph libraries and `one_hot` given such a value (`scatter(x, batch, dim_size=batch.max()
    + 1)`, `F.one_hot(y, num_classes=y.max() + 1)`). Sizes from shapes (`x.size(1)`,
    `x.shape[0]`) are static and are not reported; loop counts read from values are TPU203's.
    When the read itself is already reported as a host read (TPU101, TPU103) in the same
    statement, the size is said in that finding instead of a second one. A size parameter's
    default branch (`def mask(lengths, max_len=None): if max_len is None: max_len =
    lengths.max()`) is not reported when every call of the project passes the size, or the
    calls that leave it out pass host tensors: that branch never reads the device. A function
    the project never calls is judged as written.

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

    ## Status
    Stable. On sci1 it was right once in two findings in code that runs on a TPU: the other was
    the same host read reported by TPU101 on the same line, which is now folded into that
    finding (issue 21 item 7); loop counts moved to TPU203.
    """

    code = "TPU205"
    hot_only = True
    name = "data-dependent-size"
    summary = "A size taken from a tensor's values (`torch.arange(lengths.max())`) in hot code"
    # (`[`: an element of a device tensor, `ids_str[i]`, read as a size or a slice bound)
    requires = ("max(", "min(", "sum(", ".item()", "count_nonzero(", "prod(", "[")
    # The calls `visit_Call` takes sizes from, the slices `visit_Subscript` takes bounds from.
    hot_shapes = {
        ast.Call: lambda node, code: (
            not code.call_names(node).isdisjoint(_SIZED_CALLS)
            or any(k.arg in _LIBRARY_KEYWORDS for k in node.keywords)
        ),
        ast.Subscript: lambda node, _code: any(
            isinstance(index, ast.Slice)
            and any(b is not None and not is_int_literal(b) for b in (index.lower, index.upper))
            for index in index_elements(node)
        ),
    }
    # `n = lengths.max().item()`: the host read (TPU101/TPU103) and this size are one problem.
    folds_into = ("TPU101", "TPU103")

    VALID = (
        # The same method under Lightning's own LightningModule, which never calls it, and
        # nothing in the project calls it: it never runs.
        Valid(
            "import lightning as L\n"
            "\n"
            "\n"
            "class Model(L.LightningModule):\n"
            "    def _training_step_on_batch(self, single_batch, batch_idx):\n"
            "        for k, v in single_batch.items():\n"
            "            single_batch[k] = v.to(self.device)\n"
            "        out = self(single_batch)\n"
            "        n = (single_batch['ids'] != -1).sum()\n"
            "        return out[:, :n].sum()\n"
        ),
        # einops: the tensor comes first, the axis sizes are keywords (here a number).
        Valid(
            "import einops\nimport torch\nfrom torch import nn\n\n\n"
            "class Head(nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        tiled = einops.repeat(lengths, 'b -> (b s)', s=4)\n"
            "        return x * tiled.sum()\n"
        ),
        # The lengths `pad_packed_sequence` returns are a CPU tensor whatever the input's
        # device: slicing with one of them reads no device value.
        Valid(
            "import lightning as L\nfrom torch import nn\n"
            "from torch.nn.utils.rnn import pad_packed_sequence\n\n\n"
            "class Tagger(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.cell = nn.LSTM(8, 8)\n\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        seq, steps = pad_packed_sequence(self.cell(batch)[0])\n"
            "        total = 0\n"
            "        for j in range(seq.shape[1]):\n"
            "            total = total + seq[: steps[j], j].sum()\n"
            "        return total\n"
        ),
        # Elements of the step's data (a list of lengths as often as a tensor) and of a CPU
        # tensor are not device reads.
        Valid(
            "import lightning as L\nimport torch\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        lengths = batch['lengths']\n"
            "        offsets = torch.tensor([0, 4, 8])\n"
            "        x = self(batch)\n"
            "        return x[:, : lengths[0]].sum() + x[:, offsets[1]:].sum()\n"
        ),
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
        # A size parameter's default branch that no call takes: every call passes the size.
        Valid(
            "import torch\nfrom torch import nn\n\n\n"
            "def span_mask(lengths, width=None):\n"
            "    if width is None:\n"
            "        width = lengths.max()\n"
            "    return torch.arange(width, device=lengths.device)[None] < lengths[:, None]\n\n\n"
            "class Pool(nn.Module):\n"
            "    def forward(self, h, lengths):\n"
            "        keep = span_mask(lengths, h.shape[1])\n"
            "        return (h * keep[..., None]).sum(1)\n"
        ),
        # ... or that only calls with host lengths take.
        Valid(
            "import torch\nfrom torch import nn\n\n\n"
            "def span_mask(lengths, width=None):\n"
            "    if width is None:\n"
            "        width = lengths.max()\n"
            "    return torch.arange(width)[None] < lengths[:, None]\n\n\n"
            "class Pool(nn.Module):\n"
            "    def forward(self, h, lengths):\n"
            "        keep = span_mask(lengths, h.shape[1])\n"
            "        crops = torch.tensor([3, 5, 4])\n"
            "        return (h * keep[..., None]).sum(1), span_mask(crops)\n"
        ),
        # A count built by torch calls from host data (a CPU tensor): read without a sync.
        Valid(
            "import torch\nfrom torch import nn\n\n\n"
            "class Picker(nn.Module):\n"
            "    def pick(self, scores, widths):\n"
            "        k = (torch.tensor(widths) * self.ratio).int()\n"
            "        top = int(torch.max(k))\n"
            "        return scores[:, torch.arange(top, device=scores.device)]\n\n"
            "    def forward(self, scores, widths):\n"
            "        return self.pick(scores, widths)\n"
        ),
        # Python lists of lengths (host data).
        Valid(
            _MOD + "    def forward(self, x, texts):\n"
            "        max_len = max(len(t) for t in texts)\n"
            "        return torch.zeros(len(texts), max_len)\n"
        ),
        # Python's `max` over a list of numbers, and a tuple of static sizes: host values.
        Valid(
            _MOD + "    def forward(self, x, texts):\n"
            "        lengths = [len(t) for t in texts]\n"
            "        out = torch.zeros((max(lengths) + 1, x.shape[1]), device=x.device)\n"
            "        return out + torch.zeros((len(x), x.shape[1]), device=x.device).sum()\n"
        ),
    )
    INVALID = (
        # A size in a tuple of sizes (`torch.zeros((n, d))`) read from a device tensor.
        Invalid(
            _MOD + "    def forward(self, x, ids):\n"
            "        blocks = ids.max().long() + 1\n"
            "        out = torch.zeros((blocks, x.shape[1]), device=x.device)\n"
            "        return out.index_add(0, ids, x)\n",
            line=7,
            message="`ids.max()`",
        ),
        # Python's `max` over a device tensor reads every element on the host.
        Invalid(
            _MOD + "    def forward(self, x, ids):\n"
            "        out = torch.zeros(max(ids) + 1, x.shape[1], device=x.device)\n"
            "        return out.index_add(0, ids, x)\n",
            line=7,
            message="`max(ids)`",
        ),
        # A template method a library base's `training_step` calls (its name holds the step's,
        # nothing in the project calls it, the class's step comes from outside the project):
        # it runs every step on the step's batch.
        Invalid(
            "from somelib.modules import LibraryModuleBase\n"
            "\n"
            "\n"
            "class Model(LibraryModuleBase):\n"
            "    def _training_step_on_batch(self, single_batch, batch_idx):\n"
            "        for k, v in single_batch.items():\n"
            "            single_batch[k] = v.to(self.device)\n"
            "        out = self(single_batch)\n"
            "        n = (single_batch['ids'] != -1).sum()\n"
            "        return out[:, :n].sum()\n",
            line=9,
        ),
        # ... and an axis size read from a device tensor is one.
        Invalid(
            "import einops\nimport torch\nfrom torch import nn\n\n\n"
            "class Head(nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        tiled = einops.repeat(x, 'b d -> b s d', s=lengths.max())\n"
            "        return tiled.sum()\n",
            line=8,
        ),
        # The total of a counts tensor times a Python number (the helper's tensor-only
        # branch never runs): still read on the host to size the buffer.
        Invalid(
            "import torch\nfrom torch import nn\n\n\n"
            "def expand_counts(counts, reps):\n"
            "    if isinstance(reps, torch.Tensor):\n"
            "        reps = torch.cat((counts.new_ones(1), reps))\n"
            "    total = (counts * reps).sum()\n"
            "    return torch.zeros(total, device=counts.device)\n\n\n"
            "class Head(nn.Module):\n"
            "    def forward(self, x, counts):\n"
            "        return x + expand_counts(counts, 2).sum()\n",
            line=8,
        ),
        # Random per-sample windows (VITS-style `slice_segments`): each start is an element
        # of a device tensor, read on the host by the slice, one per sample and step.
        Invalid(
            "import lightning as L\nimport torch\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        z = self(batch)\n"
            "        starts = (torch.rand(z.size(0), device=z.device) * 100).long()\n"
            "        out = torch.zeros_like(z[:, :, :32])\n"
            "        for i in range(z.size(0)):\n"
            "            out[i] = z[i, :, starts[i]:starts[i] + 32]\n"
            "        return out.sum()\n",
            line=11,
            message="`starts[i]` reads a device tensor's values",
        ),
        # A graph library's size argument given a device value: converted on the host.
        Invalid(
            "import lightning as L\nfrom torch_scatter import scatter\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        n_graphs = batch.owner.max() + 1\n"
            "        pooled = scatter(self(batch), batch.owner, dim=0, dim_size=n_graphs)\n"
            "        return pooled.sum()\n",
            line=7,
            message="used as a size in `scatter(",
        ),
        # A count made by torch calls and torch-only methods from a helper's input (the
        # forward's tensors, of a name that says nothing): a tensor, read to size the index.
        Invalid(
            "import torch\nfrom torch import nn\n\n\n"
            "class Picker(nn.Module):\n"
            "    def pick(self, scores, keep):\n"
            "        k = (torch.sum(keep, dim=-1) * self.ratio).int()\n"
            "        top = int(torch.max(k))\n"
            "        return scores[:, torch.arange(top, device=scores.device)]\n\n"
            "    def forward(self, scores, keep):\n"
            "        return self.pick(scores, keep)\n",
            line=8,
            message="`torch.max(k)` reads a device tensor's values",
        ),
        # The same count read by the function form of the reduction.
        Invalid(
            "import torch\nfrom torch import nn\nfrom torch_scatter import scatter\n\n\n"
            "class Readout(nn.Module):\n"
            "    def forward(self, h, owner):\n"
            "        n_graphs = torch.max(owner) + 1\n"
            "        return scatter(h, owner, dim=0, dim_size=n_graphs, reduce='sum')\n",
            line=8,
            message="`torch.max(owner)` reads a device tensor's values",
        ),
        # A shape tuple bound first, then spread into the factory.
        Invalid(
            _MOD + "    def forward(self, x, word_of_token):\n"
            "        shape = x.shape[0], word_of_token.max() + 1\n"
            "        return x.new_zeros(*shape).scatter_add(1, word_of_token, x)\n",
            line=7,
            message="`word_of_token.max()` reads a device tensor's values",
        ),
        # The default branch taken by a call from the step with the device's lengths.
        Invalid(
            "import torch\nfrom torch import nn\n\n\n"
            "def span_mask(lengths, width=None):\n"
            "    if width is None:\n"
            "        width = lengths.max()\n"
            "    return torch.arange(width, device=lengths.device)[None] < lengths[:, None]\n\n\n"
            "class Pool(nn.Module):\n"
            "    def forward(self, h, lengths):\n"
            "        keep = span_mask(lengths)\n"
            "        return (h[:, : keep.shape[1]] * keep[..., None]).sum(1)\n",
            line=7,
        ),
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
            self._reported: set[object] = set()

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
                elif len(sizes) == 1:
                    # `torch.zeros((n, d))`: the sizes are the tuple's items
                    sizes = _tuple_items(sizes[0]) or sizes
            elif last == "linspace" and len(args) > 2:
                sizes = [args[2].value]
            elif name in ("nn.functional.pad",) and len(args) > 1:
                sizes = _tuple_items(args[1].value)
        elif (sized := _library_size_keywords(ctx, node)) is not None:
            sizes = [a.value for a in node.args if a.keyword and a.keyword.value in sized]
        elif _einops_call(ctx, node):
            # `einops.repeat(x, "b l -> (b s) l", s=n)`: the tensor and its pattern come
            # first, the axis sizes are the keywords' values
            sizes = [a.value for a in node.args if a.keyword is not None]
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
        if (
            not sizes
            and (name is not None or method_name(node) in _SIZE_METHODS)
            and not _einops_call(ctx, node)
        ):
            # `x.new_zeros(*shape)` / `torch.zeros(shape)` with `shape = (b, n.max() + 1)`
            # bound earlier: the sizes are the tuple's items.
            spread = [a.value for a in node.args if a.star == "*"]
            last = name.rsplit(".", 1)[-1] if name is not None else method_name(node)
            if last in _SIZE_FACTORIES | _SIZE_METHODS:
                for arg in spread or [a.value for a in args[:1]]:
                    sizes.extend(self._bound_tuple(arg))
        for size in sizes:
            self._check(size, node)

    def _bound_tuple(self, node: cst.BaseExpression) -> list[cst.BaseExpression]:
        """The items of a tuple a name is bound to (`shape = (b, n)`), else none."""
        if isinstance(node, cst.Name):
            binding = self.bindings.lookup(node.value)
            if binding is not None and binding.value is not None and binding.unpack_index is None:
                return _tuple_items(binding.value)
        return []

    def _unchanged_param(self, name: cst.BaseExpression) -> bool:
        """Whether the parameter `name` still holds what the call passed: never bound in the
        function so far, or bound only in its own default branch (`if width is None: width =
        ...`, which a call passing it skips); not `width = width.item()`."""
        if not isinstance(name, cst.Name):
            return False
        binding = self.bindings.lookup(name.value)
        if binding is None:
            return True
        node: cst.CSTNode | None = binding.node
        while node is not None:
            if isinstance(node, cst.If):
                test = node.test
                return (
                    isinstance(test, cst.Comparison)
                    and len(test.comparisons) == 1
                    and isinstance(test.comparisons[0].operator, cst.Is)
                    and isinstance(test.left, cst.Name)
                    and test.left.value == name.value
                    and isinstance(test.comparisons[0].comparator, cst.Name)
                    and test.comparisons[0].comparator.value == "None"
                )
            if isinstance(node, (cst.FunctionDef, cst.For, cst.While, cst.With, cst.Try)):
                return False
            node = self.ctx.parent(node)
        return False

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
        if source is not None and _default_branch_not_on_device(ctx, source):
            source = None
        key: object = id(source)
        if source is None and _device_size_param(ctx, size) and self._unchanged_param(size):
            # one finding per parameter and function, at its first use as a size
            source = size
            function = ctx.function
            key = (function.key if function is not None else "", size.value)  # type: ignore[attr-defined]
        if source is None:
            return
        reported = getattr(self, "_reported", None)
        if reported is None:
            reported = self._reported = set()
        if key in reported:
            return
        if _quiet(ctx, sink):
            return
        reported.add(key)
        self.report(
            source,
            f"`{source_of(ctx, source)}` reads a device tensor's values and is used as a size "
            f"in `{source_of(ctx, sink, 50)}` ({ctx.hot_reason}): a sync every step and a new "
            "graph per value; use a static size (the padded length) and a mask",
            note=f"the value is then a size in `{source_of(ctx, sink, 40)}`, so every new value "
            "also compiles a new graph (TPU205): use a static size and a mask",
        )


def _device_size_param(ctx: FileContext, size: cst.BaseExpression) -> bool:
    """Whether `size` is a parameter of the helper being walked that every call from code
    that runs every step passes a device tensor (`max_len=batch["max_len"]`, a 0-dim count
    the loader collated and Lightning moved), not a mask: using it as a size reads it."""
    function = ctx.function
    view = ctx.analysis.view
    if not isinstance(size, cst.Name) or function is None or view is None:
        return False
    if not function.hot or not function.key or not view.callers(function.key):
        return False
    params = function.node.params
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    if size.value not in names or size.value in ("self", "cls"):
        return False
    index = names.index(size.value)
    passed = view.param_value(function.key, index, per_step=True)
    return (
        not view.passes_record_attribute(function.key, index)
        and passed is not None
        and passed.kind == "device"
        and not passed.mask
        and not passed.params
        and passed.elements is None
    )


def _default_branch_not_on_device(ctx: FileContext, source: cst.BaseExpression) -> bool:
    """Whether `source` sits in the default branch of a size parameter (`if max_len is None:
    max_len = lengths.max()`) that never reads the device: every call of the project passes
    the size, or the calls that leave it out pass host tensors to read it from. A function
    the project never calls is judged as written (its callers are not visible)."""
    function = ctx.function
    view = ctx.analysis.view
    if function is None or view is None:
        return False
    node: cst.CSTNode | None = source
    branch: cst.If | None = None
    while node is not None and node is not function.node:
        parent = ctx.parent(node)
        if isinstance(parent, cst.If) and node is parent.body:
            branch = parent
            break
        node = parent
    if branch is None:
        return False
    test = branch.test
    if not (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Is)
        and isinstance(test.left, cst.Name)
        and isinstance(test.comparisons[0].comparator, cst.Name)
        and test.comparisons[0].comparator.value == "None"
    ):
        return False
    size_name = test.left.value
    params = function.node.params
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    if size_name not in names or not view.callers(function.key):
        return False
    if not view.default_takers(function.key, size_name):
        return True  # every call passes the size: the branch never runs in the project
    read = source
    while isinstance(read, cst.Call) and isinstance(read.func, cst.Attribute):
        read = read.func.value  # `lengths.max().int()` -> `lengths`
    if not isinstance(read, cst.Name) or read.value not in names:
        return False
    passed = view.param_value(function.key, names.index(read.value), leaving_out=size_name)
    return passed is not None and passed.kind in ("cpu", "numpy", "number", "host")


def _tuple_items(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(node, (cst.Tuple, cst.List)):
        return [e.value for e in node.elements if isinstance(e, cst.Element)]
    return []
