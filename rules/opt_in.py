"""TPU9xx: opt-in checks (off by default)."""

from __future__ import annotations
