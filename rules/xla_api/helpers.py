"""What several torch_xla-API rules (TPU5xx) share: the module path of `xm`."""

from __future__ import annotations

_XM = "torch_xla.core.xla_model"
