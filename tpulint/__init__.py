"""tpulint: find, fix and verify what makes PyTorch Lightning code slow or broken on TPUs.

Public API (the CLI, the pre-commit hooks and editors are thin layers over it):

    check_source(text, path, config) -> list[Diagnostic]
    fix_source(text, path, config, unsafe=False) -> FixResult
    check_paths(paths, config) -> RunResult
    fix_paths(paths, config, unsafe=False, apply=False) -> RunResult

The layers, bottom up, one folder each (a module imports only its own layer and those below;
no import cycles: tests/test_layers.py reads the layers from these folders and checks both,
lazy imports included):

    datatypes/   data types: diagnostics, roundtrip
    config/      configuration (settings) and the rule registry (registry, from data/rules.json)
    rule_api/    the Rule base class (rule), TPLxxx rules (meta_rules), cst_helpers
    analysis/    the project model and per-file analysis, yaml_config, suppression, fixes
    rules/       the catalogue, installed as tpulint.rules (the engine reaches it through the
                 registry)
    engine/      check_source / fix_source for one file (source), deep_stack
    runner/      check_paths / fix_paths for many files (paths), discovery, project_build,
                 cache, pool, writing
    (this folder) the front ends: cli, __main__, server (language server), reporting/, docs,
                 manifest, testing

This module imports nothing at run time (the API above is loaded lazily), so every layer may
read `__version__` from it.
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
    from tpulint.config.settings import Config, load_config
    from tpulint.datatypes.diagnostics import Diagnostic
    from tpulint.engine.source import FixResult, check_source, fix_source
    from tpulint.runner.paths import RunResult, check_paths, fix_paths

_EXPORTS = {
    "Config": "tpulint.config.settings",
    "load_config": "tpulint.config.settings",
    "Diagnostic": "tpulint.datatypes.diagnostics",
    "FixResult": "tpulint.engine.source",
    "check_source": "tpulint.engine.source",
    "fix_source": "tpulint.engine.source",
    "RunResult": "tpulint.runner.paths",
    "check_paths": "tpulint.runner.paths",
    "fix_paths": "tpulint.runner.paths",
}


def __getattr__(name: str) -> Any:
    # Lazy, so `import tpulint` (and `tpulint --version`) does not import libcst.
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tpulint' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
