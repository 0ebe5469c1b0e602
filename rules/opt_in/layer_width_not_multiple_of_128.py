"""TPU903 layer-width-not-multiple-of-128."""

from __future__ import annotations

import math
import re

import libcst as cst

from tpulint.analysis.context import get_arg
from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.cst_helpers import int_value
from tpulint.rule_api.rule import Invalid, Rule, Valid, last_names

from ..shared.matchers import source_of

_MXU = 128
_MIN_WASTE = 0.10  # report when at least 10% of the padded width is padding
_LAYERS = {
    # qualified name: (positional indices of feature widths, their keywords)
    "torch.nn.Linear": ((0, 1), ("in_features", "out_features")),
    "torch.nn.modules.linear.Linear": ((0, 1), ("in_features", "out_features")),
    "torch.nn.LazyLinear": ((0,), ("out_features",)),
    "torch.nn.Bilinear": ((2,), ("out_features",)),
    "torch.nn.Embedding": ((1,), ("embedding_dim",)),
    "torch.nn.EmbeddingBag": ((1,), ("embedding_dim",)),
}
for _conv in (
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
):
    _LAYERS[f"torch.nn.{_conv}"] = ((0, 1), ("in_channels", "out_channels"))
_HEAD_NAMES = re.compile(
    r"(?i)(head|classifier|logits?$|to_logits|^cls$|_cls$|output_layer|fc_out|final|num_classes)"
)


def _padded(width: int) -> int:
    return math.ceil(width / _MXU) * _MXU


def _nearest_multiple(width: int) -> int:
    lower = max(_MXU, width // _MXU * _MXU)
    upper = _padded(width)
    return lower if width - lower <= upper - width else upper


class LayerWidthNotMultipleOf128(Rule):
    """
    ## What it does
    Finds literal feature widths of `nn.Linear` (in and out features), `nn.Conv*d` /
    `nn.ConvTranspose*d` (in and out channels) and `nn.Embedding` (embedding dimension) that
    are not multiples of 128 and waste at least 10% of the padded width: `nn.Linear(512,
    300)` (300 is padded to 384: 22% padding) is reported, `nn.Linear(512, 1000)` (1000 is
    padded to 1024: 2%) is not. Widths below 128 are not reported (small layers and output
    heads such as the number of classes cannot fill the matrix unit anyway), nor are the
    output widths of layers named like heads (`self.classifier`, `self.head`,
    `logits`). Widths from variables and config values are not seen.

    ## Why is this bad on TPU?
    The TPU's matrix unit (MXU) multiplies 128x128 tiles, and XLA lays the feature
    dimension of every tensor out in 128-wide lanes: a width of 300 is computed and stored
    as 384, so 22% of that layer's multiply-accumulates and memory traffic are padding. The
    Cloud TPU performance guide recommends feature dimensions that are multiples of 128.

    ## Example
    ```python
    from torch import nn

    mlp = nn.Sequential(nn.Linear(512, 300), nn.ReLU(), nn.Linear(300, 512))
    ```

    ## Use instead
    ```python
    from torch import nn

    mlp = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 512))
    ```

    ## Fix safety
    Display-only: the suggestion rounds the width to the nearest multiple of 128, which
    changes the model (its capacity and the shapes of its checkpoints).

    ## References
    - [Cloud TPU performance guide: tensor dimensions and padding](https://cloud.google.com/tpu/docs/performance-guide)
    - [Cloud TPU docs: system architecture (MXU)](https://cloud.google.com/tpu/docs/system-architecture-tpu-vm)
    """

    code = "TPU903"
    name = "layer-width-not-multiple-of-128"
    summary = "Literal layer widths that pad the TPU's 128-wide matrix unit by 10% or more"
    severity = Severity.INFO
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_message = "Round the width to a multiple of 128"
    default_enabled = False
    # The layers' own names (`Bilinear` is no `Linear` to a text search).
    requires = tuple(sorted(last_names(_LAYERS)))
    screen_calls = last_names(_LAYERS)

    VALID = (
        Valid("from torch import nn\n\nlayer = nn.Linear(512, 1024)\n"),
        # Small layers and class-count heads.
        Valid("from torch import nn\n\nhead = nn.Linear(64, 10)\nconv = nn.Conv2d(3, 64, 3)\n"),
        # 1000 is padded to 1024: only 2% waste.
        Valid("from torch import nn\n\nlayer = nn.Linear(2048, 1000)\n"),
        Valid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.classifier = torch.nn.Linear(512, 200)\n"
        ),
    )
    INVALID = (
        Invalid(
            "from torch import nn\n\n"
            # One width in two layers of one statement: one finding.
            "mlp = nn.Sequential(nn.Linear(512, 300), nn.ReLU(), nn.Linear(300, 512))\n",
            line=3,
            message="padded to 384",
            expected_suggestion="from torch import nn\n\n"
            "mlp = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 512))\n",
        ),
        Invalid(
            "import torch.nn as nn\n\nemb = nn.Embedding(30000, embedding_dim=200)\n", message="200"
        ),
        Invalid(
            "import torch\n\n"
            "conv = torch.nn.Conv2d(in_channels=160, out_channels=256, kernel_size=3)\n"
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        qualified = ctx.qualify(node.func)
        spec = _LAYERS.get(qualified or "")
        if spec is None:
            return
        positions, keywords = spec
        head = self._head_like(node)
        for position, keyword in zip(positions, keywords, strict=True):
            arg = get_arg(node, keyword, position)
            if arg is None:
                continue
            width = int_value(arg.value)
            if width is None or width <= _MXU or width % _MXU == 0:
                continue
            padded = _padded(width)
            waste = (padded - width) / padded
            if waste < _MIN_WASTE:
                continue
            if head and keyword.startswith("out"):
                continue
            suggestion = _nearest_multiple(width)
            self.report(
                arg.value,
                f"width {width} in `{source_of(ctx, node)}` is padded to {padded} on the TPU's "
                f"128-wide matrix unit ({waste:.0%} of its work is padding); use a multiple of "
                f"128 such as {suggestion}",
                replacement=cst.Integer(str(suggestion)),
            )

    def _head_like(self, node: cst.Call) -> bool:
        ctx = self.ctx
        parent = ctx.parent(node)
        if isinstance(parent, cst.Assign):
            for target in parent.targets:
                name = target.target
                text = (
                    name.attr.value
                    if isinstance(name, cst.Attribute)
                    else (name.value if isinstance(name, cst.Name) else "")
                )
                if _HEAD_NAMES.search(text):
                    return True
        return False
