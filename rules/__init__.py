"""The TPU rule catalogue (installed as `tpulint.rules`).

    rules/
      <family>/            one package per family: trainer_config (TPU0xx), host_sync (TPU1xx),
                           dynamic_shapes (TPU2xx), data_pipeline (TPU3xx), precision (TPU4xx),
                           xla_api (TPU5xx), opt_in (TPU9xx)
        <rule_name>.py     one module per rule, named after it (host_sync/item_in_hot_path.py
                           is TPU101 item-in-hot-path): the whole rule and nothing else
        helpers.py         what several rules of the family share
      shared/              helpers shared by several families
      rewrite/             the rewrite engine behind the TPU1xx/TPU2xx fixes

A new rule is a new module in its family's package, holding one `tpulint.rule_api.rule.Rule`
subclass (see that class for what a rule declares); then `python -m tpulint.manifest`
registers it. ALL_RULES is collected from the family packages, so nothing else lists it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from tpulint.rule_api.rule import Rule

FAMILIES = (
    "trainer_config",
    "host_sync",
    "dynamic_shapes",
    "data_pipeline",
    "precision",
    "xla_api",
    "opt_in",
)
HELPERS = "helpers"  # the module of a family that holds no rule


def rule_modules() -> list[str]:
    """The names of every rule module, family by family."""
    names = []
    for family in FAMILIES:
        package = importlib.import_module(f"{__name__}.{family}")
        for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            if module.name != HELPERS and not module.ispkg:
                names.append(f"{package.__name__}.{module.name}")
    return names


def _collect() -> tuple[type[Rule], ...]:
    rules = []
    for name in rule_modules():
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(value, Rule)
                and value.__module__ == module.__name__
                and hasattr(value, "code")
            ):
                rules.append(value)
    return tuple(sorted(rules, key=lambda r: r.code))


ALL_RULES = _collect()
