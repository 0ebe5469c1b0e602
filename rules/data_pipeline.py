"""TPU3xx: data pipeline and batch geometry."""

from __future__ import annotations
