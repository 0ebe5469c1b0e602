"""TPU4xx: precision and dtypes."""

from __future__ import annotations
