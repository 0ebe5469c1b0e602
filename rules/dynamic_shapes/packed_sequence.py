"""TPU204 packed-sequence."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.project import ClassKind
from tpulint.datatypes.diagnostics import Applicability
from tpulint.rule_api.rule import Invalid, Rule, Valid, last_names

from ..shared.tensors import positional
from .helpers import _MOD

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
    screen_calls = last_names(_PACKED)

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
