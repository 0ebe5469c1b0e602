"""What several dynamic-shape rules (TPU2xx) share: the heads of their examples, when a finding
stays quiet (rare or device-checked code), and which value kinds may be on the device."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import FileContext
from tpulint.analysis.values import DEVICE, ValueKind

_HEAD = "import lightning as L\nimport torch\n\n\nclass Model(L.LightningModule):\n"
_MOD = "import torch\nfrom torch import nn\n\n\nclass Head(nn.Module):\n"


def _quiet(ctx: FileContext, node: cst.CSTNode) -> bool:
    guards = ctx.guards(node)
    return "rare" in guards or "device-check" in guards


def _maybe_device(kind: ValueKind) -> bool:
    return kind in (DEVICE, ValueKind.UNKNOWN)
