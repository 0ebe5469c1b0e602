"""tpulint's Lightning callback for your own training run:

    from tpulint.lightning import TPUReadiness
    trainer = L.Trainer(accelerator="tpu", callbacks=[TPUReadiness("tpu-readiness")])

then `tpulint report tpu-readiness` judges what it recorded, as `tpulint verify` would
(docs/verify.md, "Your own run: TPUReadiness"). Works with `lightning` and
`pytorch_lightning`. This module is only an entry point: torch, torch_xla and Lightning are
imported when TPUReadiness is first used, by tpulint.runtime (tpulint's core imports none of
them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tpulint.runtime.child.readiness import TPUReadiness

__all__ = ["TPUReadiness"]


def __getattr__(name: str) -> Any:
    if name == "TPUReadiness":
        from tpulint.runtime.child.readiness import TPUReadiness

        return TPUReadiness
    raise AttributeError(f"module 'tpulint.lightning' has no attribute {name!r}")
