"""The TPU rule catalogue, one module per family (installed as `tpulint.rules`).

Each rule is a self-documenting class (see `tpulint.rule.Rule`). ALL_RULES is built by
collecting the Rule subclasses of the family modules, so adding a rule is adding a class.
"""

from __future__ import annotations

import inspect

from tpulint.rule import Rule

from . import (
    data_pipeline,
    dynamic_shapes,
    host_sync,
    opt_in,
    optimizer_before_move,
    precision,
    torch_distributed,
    trainer_config,
    xla_api,
)

FAMILY_MODULES = (
    trainer_config,
    host_sync,
    dynamic_shapes,
    data_pipeline,
    precision,
    xla_api,
    torch_distributed,  # TPU505, in the xla_api family; its own module (see its docstring)
    optimizer_before_move,  # TPU506, likewise
    opt_in,
)


def _collect() -> tuple[type[Rule], ...]:
    rules = []
    for module in FAMILY_MODULES:
        for _, value in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(value, Rule)
                and value.__module__ == module.__name__
                and hasattr(value, "code")
            ):
                rules.append(value)
    return tuple(sorted(rules, key=lambda r: r.code))


ALL_RULES = _collect()
