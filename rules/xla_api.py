"""TPU5xx: torch_xla API usage and deprecations."""

from __future__ import annotations
