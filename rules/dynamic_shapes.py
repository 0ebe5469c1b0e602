"""TPU2xx: dynamic shapes and recompilation."""

from __future__ import annotations
