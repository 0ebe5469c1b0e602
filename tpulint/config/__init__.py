"""Layer 2, config and registry: `[tool.tpulint]` and CLI overrides (settings), rule selection
from the manifest `data/rules.json` (registry; rule classes are loaded by name only when
needed)."""
