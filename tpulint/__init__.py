"""tpulint: find, fix and verify what makes PyTorch Lightning code slow or broken on TPUs.

Public API (the CLI, the pre-commit hooks and editors are thin layers over it):

    check_source(text, path, config) -> list[Diagnostic]
    fix_source(text, path, config, unsafe=False) -> FixResult
    check_paths(paths, config) -> RunResult
    fix_paths(paths, config, unsafe=False, apply=False) -> RunResult

The modules in layers, bottom up (each imports only its own layer and those below; no import
cycles: tests/test_layers.py checks both, lazy imports included):

    data types        diagnostics
    config, registry  config (pyproject.toml), registry (rule selection from the manifest,
                      data/rules.json; rule classes loaded by name when needed)
    rule API          rule (the Rule base class), meta_rules (TPLxxx), cst_helpers
    analysis          analysis/ (project scan, imports, semantic model, values, walker,
                      positions), yaml_config (LightningCLI configs), suppression, fixes
    rules             tpulint.rules (the catalogue; the engine reaches it through the registry)
    engine            engine: check_source / fix_source for one file
    runner            discovery, cache, runner: many files, the cache, worker processes
    front ends        cli, server (language server), reporting/, docs, manifest, testing
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

__all__ = [
    "Config",
    "Diagnostic",
    "FixResult",
    "RunResult",
    "__version__",
    "check_paths",
    "check_source",
    "fix_paths",
    "fix_source",
    "load_config",
]

if TYPE_CHECKING:
    from tpulint.config import Config, load_config
    from tpulint.diagnostics import Diagnostic
    from tpulint.engine import FixResult, check_source, fix_source
    from tpulint.runner import RunResult, check_paths, fix_paths

_EXPORTS = {
    "Config": "tpulint.config",
    "load_config": "tpulint.config",
    "Diagnostic": "tpulint.diagnostics",
    "FixResult": "tpulint.engine",
    "check_source": "tpulint.engine",
    "fix_source": "tpulint.engine",
    "RunResult": "tpulint.runner",
    "check_paths": "tpulint.runner",
    "fix_paths": "tpulint.runner",
}


def __getattr__(name: str) -> Any:
    # Lazy, so `import tpulint` (and `tpulint --version`) does not import libcst.
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tpulint' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
