"""TPU003 legacy-xla-strategy."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.imports import module_name_of
from tpulint.analysis.project import LIGHTNING_ROOTS
from tpulint.analysis.yaml_config import YamlDocument
from tpulint.datatypes.diagnostics import Applicability, Edit, Severity
from tpulint.rule_api.cst_helpers import string_value
from tpulint.rule_api.rule import ImportSpec, Invalid, Rule, Valid

from ..shared.configuration import (
    Rename,
    is_framework_file,
    lightning_at_least,
    plan_renames,
    with_string_value,
)
from .helpers import _LIGHTNING_IMPORT, _root_local

_STRATEGY_RENAMES = {"tpu_spawn": "xla", "tpu_spawn_debug": "xla_debug"}
# Lightning 1.x TPU strategy classes that Lightning 2 no longer has under any name
# (`TPUSpawnPlugin` and `SingleTPUPlugin` were renamed `TPUSpawnStrategy` and
# `SingleTPUStrategy` in 1.6; 2.0 renamed those again). `SingleTPUStrategy` itself, like the
# precision plugins `TPUPrecisionPlugin` and `TPUBf16PrecisionPlugin`, is still importable in
# Lightning 2.6 as a deprecated alias (lightning/pytorch/_graveyard/tpu.py): not reported.
_CLASS_RENAMES = {
    "TPUSpawnStrategy": "XLAStrategy",
    "TPUSpawnPlugin": "XLAStrategy",
    "SingleTPUPlugin": "SingleDeviceXLAStrategy",
}


class LegacyXlaStrategy(Rule):
    """
    ## What it does
    Finds the Lightning 1.x names of the TPU strategy: the strategy strings `"tpu_spawn"` and
    `"tpu_spawn_debug"` (as `Trainer(strategy=...)`, in dictionaries and config defaults, under
    `trainer: strategy:` in LightningCLI YAML configs, Hydra Trainer configs and YAML sections
    the code spreads into a TPU Trainer, `pl.Trainer(**cfg.trainer)`) and the
    classes `TPUSpawnStrategy`, `TPUSpawnPlugin` and `SingleTPUPlugin` (Lightning 1.5's name
    of the single-core strategy), built or used as base classes.

    ## Why is this bad on TPU?
    Lightning 2.0 renamed them to `"xla"`, `"xla_debug"`, `XLAStrategy` and
    `SingleDeviceXLAStrategy`, and removed the old names: `Trainer(strategy="tpu_spawn")`
    raises a `ValueError` (unknown strategy) and
    `from lightning.pytorch.strategies import TPUSpawnStrategy` an `ImportError`, before
    anything reaches the TPU.

    ## Example
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", devices="auto", strategy="tpu_spawn")
    ```

    ## Use instead
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", devices="auto", strategy="xla")
    ```

    ## Fix safety
    The fix is safe: it renames the string or the class (adding
    `from <package>.strategies import XLAStrategy` for the package root the file already
    uses, `lightning.pytorch` or `pytorch_lightning`, and dropping the old import once it is
    unused); the strategies behave the same under their new names. Subclasses of
    `TPUSpawnStrategy` get an unsafe fix: `XLAStrategy`'s hooks are not the same as the 1.x
    class's, so overridden methods may need changes. Comparisons such as
    `if strategy == "tpu_spawn":` and Lightning's own source are not reported. Nothing is
    reported when the configured `lightning-version` is older than 2.0.

    ## References
    - [Lightning 2.0: TPU strategy and accelerator renamed to XLA (#16781)](https://github.com/Lightning-AI/pytorch-lightning/pull/16781)
    - [Lightning docs: TPU training (strategy "xla")](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_intermediate.html)
    """

    code = "TPU003"
    name = "legacy-xla-strategy"
    summary = (
        'Strategy `"tpu_spawn"` / `TPUSpawnStrategy`, renamed `"xla"` / `XLAStrategy` in '
        "Lightning 2.0"
    )
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    fix_sometimes = True
    fix_message = "Rename to the XLA strategy"
    requires = ("tpu_spawn", "TPUSpawnStrategy", "TPUSpawnPlugin", "SingleTPUPlugin")

    VALID = (
        Valid(_LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", strategy="xla")\n'),
        # Compatibility code that tests for the old name is left alone.
        Valid('def is_tpu(strategy):\n    return strategy in ("tpu_spawn", "xla")\n'),
        Valid('def is_tpu(strategy):\n    return strategy == "tpu_spawn"\n'),
        # A docstring that mentions the old name.
        Valid('def train():\n    """Runs with strategy="tpu_spawn" on Lightning 1.x."""\n'),
        # Lightning 1.x is targeted.
        Valid(
            _LIGHTNING_IMPORT + 'trainer = L.Trainer(strategy="tpu_spawn")\n',
            config={"lightning-version": "1.9"},
        ),
        Valid("trainer:\n  strategy: xla\n", path="config.yaml"),
        # Deprecated aliases that Lightning 2.6 still imports (they warn, and build the XLA
        # classes): not a failure.
        Valid(
            "import pytorch_lightning.plugins as plugins\n\n"
            "class Bf16Plugin(plugins.TPUBf16PrecisionPlugin):\n    pass\n\n"
            "plugin = plugins.TPUPrecisionPlugin()\n"
        ),
        Valid(
            "from pytorch_lightning.strategies import SingleTPUStrategy\n\n"
            "strategy = SingleTPUStrategy(device=0)\n"
        ),
    )
    INVALID = (
        Invalid(
            _LIGHTNING_IMPORT + 'trainer = L.Trainer(accelerator="tpu", strategy="tpu_spawn")\n',
            expected_fix=_LIGHTNING_IMPORT
            + 'trainer = L.Trainer(accelerator="tpu", strategy="xla")\n',
            line=3,
            applicability=Applicability.SAFE,
            message='`"tpu_spawn"` was renamed `"xla"`',
        ),
        Invalid(
            "import pytorch_lightning as pl\n\n"
            "cfg = dict(max_epochs=1, strategy='tpu_spawn_debug')\n"
            "trainer = pl.Trainer(**cfg)\n",
            expected_fix="import pytorch_lightning as pl\n\n"
            "cfg = dict(max_epochs=1, strategy='xla_debug')\n"
            "trainer = pl.Trainer(**cfg)\n",
        ),
        Invalid(
            "from pytorch_lightning import Trainer\n"
            "from pytorch_lightning.strategies import TPUSpawnStrategy\n\n"
            'trainer = Trainer(accelerator="tpu", strategy=TPUSpawnStrategy(debug=True))\n',
            expected_fix="from pytorch_lightning import Trainer\n"
            "from pytorch_lightning.strategies import XLAStrategy\n\n"
            'trainer = Trainer(accelerator="tpu", strategy=XLAStrategy(debug=True))\n',
            line=4,
            applicability=Applicability.SAFE,
            message="`TPUSpawnStrategy` was renamed `XLAStrategy`",
        ),
        Invalid(
            "import lightning.pytorch as pl\n\nstrategy = pl.strategies.TPUSpawnStrategy()\n",
            expected_fix="import lightning.pytorch as pl\n\n"
            "strategy = pl.strategies.XLAStrategy()\n",
        ),
        # An import inside a function: the new import goes in the same place.
        Invalid(
            "import lightning as L\n\n"
            "def make():\n"
            "    from lightning.pytorch.strategies import DDPStrategy, TPUSpawnStrategy\n"
            "    return L.Trainer(strategy=TPUSpawnStrategy())\n",
            expected_fix="import lightning as L\n\n"
            "def make():\n"
            "    from lightning.pytorch.strategies import DDPStrategy\n"
            "    from lightning.pytorch.strategies import XLAStrategy\n"
            "    return L.Trainer(strategy=XLAStrategy())\n",
        ),
        # A subclass: renamed, but unsafely (the 1.x hooks differ).
        Invalid(
            "from pytorch_lightning.strategies import TPUSpawnStrategy\n\n"
            "class MyStrategy(TPUSpawnStrategy):\n"
            "    pass\n",
            applicability=Applicability.UNSAFE,
            expected_fix="from pytorch_lightning.strategies import XLAStrategy\n\n"
            "class MyStrategy(XLAStrategy):\n"
            "    pass\n",
        ),
        # Lightning 1.5's plugin names, as a base class through a module alias and built.
        Invalid(
            "import pytorch_lightning.plugins as plugins\n\n"
            "class OneCore(plugins.SingleTPUPlugin):\n    pass\n",
            line=3,
            message="`SingleTPUPlugin` was renamed `SingleDeviceXLAStrategy`",
            expected_fix="import pytorch_lightning.plugins as plugins\n\n"
            "class OneCore(plugins.SingleDeviceXLAStrategy):\n    pass\n",
        ),
        Invalid(
            "from pytorch_lightning.plugins import SingleTPUPlugin\n\n"
            "def one_core(index):\n    return SingleTPUPlugin(device=index)\n",
            line=4,
            expected_fix="from pytorch_lightning.strategies import SingleDeviceXLAStrategy\n\n"
            "def one_core(index):\n    return SingleDeviceXLAStrategy(device=index)\n",
        ),
        Invalid(
            "trainer:\n  accelerator: tpu\n  strategy: tpu_spawn  # 8 cores\n",
            path="config.yaml",
            expected_fix="trainer:\n  accelerator: tpu\n  strategy: xla  # 8 cores\n",
            line=3,
        ),
        Invalid(
            "trainer:\n  strategy:\n"
            "    class_path: pytorch_lightning.strategies.TPUSpawnStrategy\n",
            path="config.yaml",
            expected_fix="trainer:\n  strategy:\n"
            "    class_path: pytorch_lightning.strategies.XLAStrategy\n",
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._enabled = lightning_at_least(self.ctx, "2.0") and not is_framework_file(self.ctx)
        self._renames: list[Rename] = []
        self._imports: list[tuple[cst.ImportAlias, str]] = []
        return None

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if not self._enabled:
            return
        value = string_value(node)
        if value not in _STRATEGY_RENAMES:
            return
        parent = self.ctx.parent(node)
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)) or _in_container_test(
            self.ctx, node
        ):
            return
        if isinstance(parent, cst.Expr):
            return  # a docstring
        new = _STRATEGY_RENAMES[value]
        self.report(
            node,
            f'strategy `"{value}"` was renamed `"{new}"` in Lightning 2.0 (the old name raises '
            "ValueError: unknown strategy)",
            replacement=with_string_value(node, new),
        )

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if not self._enabled or isinstance(node.names, cst.ImportStar) or node.relative:
            return
        base = module_name_of(node.module)
        if base.split(".", 1)[0] not in LIGHTNING_ROOTS:
            return
        for alias in node.names:
            name = module_name_of(alias.name)
            if name in _CLASS_RENAMES:
                self._imports.append((alias, base))
        return

    def visit_Name(self, node: cst.Name) -> None:
        if self._enabled and node.value in _CLASS_RENAMES:
            self._reference(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self._enabled and node.attr.value in _CLASS_RENAMES:
            self._reference(node)

    def _reference(self, node: cst.Name | cst.Attribute) -> None:
        ctx = self.ctx
        parent = ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return  # the `attr` of an Attribute handled as a whole
        if isinstance(parent, (cst.ImportAlias, cst.ClassDef)) and not isinstance(
            parent, cst.ClassDef
        ):
            return
        if isinstance(parent, cst.ClassDef) and parent.name is node:
            return
        if any(isinstance(a, (cst.Import, cst.ImportFrom)) for a in ctx.ancestors(node)):
            return
        qualified = ctx.qualify(node)
        if qualified is None or qualified.split(".", 1)[0] not in LIGHTNING_ROOTS:
            return
        old_name = qualified.rsplit(".", 1)[-1]
        if old_name not in _CLASS_RENAMES:
            return
        new_name = _CLASS_RENAMES[old_name]
        package = _strategies_package(qualified)
        subclass = isinstance(parent, cst.Arg) and isinstance(ctx.parent(parent), cst.ClassDef)
        message = (
            f"`{old_name}` was renamed `{new_name}` in Lightning 2.0 (the old name fails with "
            f"ImportError); use `{new_name}`"
        )
        if isinstance(node, cst.Attribute):
            new: cst.BaseExpression = node.with_changes(attr=cst.Name(new_name))
            local = _root_local(node)
            needs = None
            drop = False
        else:
            new = cst.Name(new_name)
            local = node.value
            needs = ImportSpec(f"{package}.strategies", new_name)
            drop = True
        self._renames.append(
            Rename(
                report_node=parent
                if isinstance(parent, cst.Call) and parent.func is node
                else node,
                old=node,
                new=new,
                local=local,
                needs=needs,
                message=message,
                applicability=Applicability.UNSAFE if subclass else Applicability.SAFE,
                fix_message=f"Use `{new_name}`",
                drop_old=drop,
            )
        )

    def leave_Module(self, node: cst.Module) -> None:
        if not self._enabled:
            return
        if self._renames:
            plan_renames(self.ctx, self, self._renames)
        used = {r.local for r in self._renames}
        for alias, base in self._imports:
            local = alias.evaluated_alias or alias.evaluated_name
            if local in used:
                continue
            old_name = module_name_of(alias.name)
            new_name = _CLASS_RENAMES[old_name]
            self.report(
                alias,
                f"`{old_name}` was removed in Lightning 2.0 (ImportError); import `{new_name}` "
                f"from `{_strategies_package(base + '.' + old_name)}.strategies`",
            )

    def check_yaml(self, document: YamlDocument) -> None:
        if self.yaml_config is not None and not lightning_at_least(self.yaml_config, "2.0"):
            return
        trainer = document.find("trainer")
        strategy = trainer.child("strategy") if trainer is not None else None
        if strategy is None:
            return
        value = strategy.value
        if (
            isinstance(value, str)
            and value in _STRATEGY_RENAMES
            and strategy.value_start
            and strategy.value_end
        ):
            new = _STRATEGY_RENAMES[value]
            raw = strategy.raw or value
            self.report_yaml(
                strategy.value_start,
                strategy.value_end,
                f"`{document.trainer_label}strategy: {value}` was renamed `{new}` in Lightning "
                "2.0 (unknown strategy)",
                edits=[Edit(strategy.value_start, strategy.value_end, raw.replace(value, new))],
            )
            return
        class_path = strategy.child("class_path")
        if class_path is None or not isinstance(class_path.value, str):
            return
        path = class_path.value
        old_name = path.rsplit(".", 1)[-1]
        if old_name not in _CLASS_RENAMES or path.split(".", 1)[0] not in LIGHTNING_ROOTS:
            return
        if class_path.value_start is None or class_path.value_end is None:
            return
        new_path = f"{_strategies_package(path)}.strategies.{_CLASS_RENAMES[old_name]}"
        self.report_yaml(
            class_path.value_start,
            class_path.value_end,
            f"`{old_name}` was renamed `{_CLASS_RENAMES[old_name]}` in Lightning 2.0 (the class "
            "path fails to import)",
            edits=[Edit(class_path.value_start, class_path.value_end, new_path)],
        )


def _strategies_package(qualified: str) -> str:
    """`pytorch_lightning` or `lightning.pytorch`: the package root the file uses."""
    return "pytorch_lightning" if qualified.startswith("pytorch_lightning") else "lightning.pytorch"


def _in_container_test(ctx, node: cst.CSTNode) -> bool:
    """`x in ("tpu_spawn", ...)`: the string is an element of a collection that is the right
    side of a comparison."""
    parent = ctx.parent(node)
    if isinstance(parent, cst.Element):
        container = ctx.parent(parent)
        holder = ctx.parent(container) if container is not None else None
        return isinstance(holder, cst.ComparisonTarget)
    return False
