"""TPU504 xla-runtime-before-spawn."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.project import FileView
from tpulint.datatypes.diagnostics import Severity
from tpulint.rule_api.rule import Invalid, Rule, Valid, last_names

from ..shared.configuration import is_framework_file
from ..shared.matchers import launch_position, source_of

# torch_xla calls that start the XLA runtime (PJRT client) in the calling process.
_RUNTIME_CALLS = frozenset(
    {
        "torch_xla.core.xla_model.xla_device",
        "torch_xla.core.xla_model.xrt_world_size",
        "torch_xla.core.xla_model.get_ordinal",
        "torch_xla.core.xla_model.get_local_ordinal",
        "torch_xla.core.xla_model.is_master_ordinal",
        "torch_xla.core.xla_model.get_xla_supported_devices",
        "torch_xla.core.xla_model.xla_device_hw",
        "torch_xla.device",
        "torch_xla.devices",
        "torch_xla.runtime.world_size",
        "torch_xla.runtime.global_ordinal",
        "torch_xla.runtime.local_ordinal",
        "torch_xla.runtime.global_device_count",
        "torch_xla.runtime.addressable_device_count",
        "torch_xla.runtime.local_device_count",
        "torch_xla.runtime.global_runtime_device_count",
        "torch_xla.runtime.use_spmd",
    }
)


class XlaRuntimeBeforeSpawn(Rule):
    """
    ## What it does
    Finds calls that start the XLA runtime in the process that launches training, before
    Lightning starts one process per TPU core: `xm.xla_device()`, `torch_xla.device()`,
    `xr.world_size()`, `xm.xrt_world_size()`, `xr.global_ordinal()`,
    `xm.is_master_ordinal()`, ... at module level (run at import, in every process and in
    the launcher) or in the training script's launching code before `trainer.fit(...)`.
    Inside LightningModules these calls are TPU005's. A program of its own beside the
    Lightning code (an inference or demo app that names no Lightning, imports no module of
    the project and is imported by none) is not reported: it never runs in a process that
    spawns, and one device in one process is its intended use.

    ## Why is this bad on TPU?
    Lightning's XLA strategy starts the TPU processes itself (`xmp.spawn`). A process that
    already created the PJRT client owns the TPU devices, and spawning then fails
    ("Runtime is already initialized. Do not use the XLA device before calling
    xmp.spawn."). Values read there are also wrong for the cores: before the spawn the
    world size is 1 and the ordinal 0.

    ## Example
    ```python
    import lightning as L
    import torch_xla.core.xla_model as xm

    device = xm.xla_device()


    def main():
        trainer = L.Trainer(accelerator="tpu", devices="auto")
        trainer.fit(Model())
    ```

    ## Use instead
    ```python
    import lightning as L


    def main():
        trainer = L.Trainer(accelerator="tpu", devices="auto")
        trainer.fit(Model())
    ```

    Inside the LightningModule use `self.device`; for the number of cores let
    `devices="auto"` decide, and read `self.trainer.world_size` once training runs.

    ## Fix safety
    No fix: what the value was used for decides what replaces it.

    ## References
    - [torch_xla PJRT: "Do not use the XLA device before calling xmp.spawn"](https://github.com/pytorch/xla/blob/master/docs/source/learn/pjrt.md)
    - [Lightning: `XLAStrategy` launches the processes (`_XLALauncher`)](https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/strategies/launchers/xla.py)
    """

    code = "TPU504"
    name = "xla-runtime-before-spawn"
    summary = "The XLA runtime started at import or before `trainer.fit` (breaks the spawn)"
    severity = Severity.ERROR
    requires = ("torch_xla",)
    screen_calls = last_names(_RUNTIME_CALLS)

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        return _lightning_project(source, view)

    VALID = (
        # Inside a LightningModule (TPU005's), and in a plain torch_xla script's spawned fn.
        Valid(
            "import lightning as L\nimport torch_xla.core.xla_model as xm\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def setup(self, stage):\n"
            "        self.n = xm.xrt_world_size()\n"
        ),
        Valid(
            "import torch_xla.core.xla_model as xm\n"
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n\n"
            "def _mp_fn(index):\n"
            "    device = xm.xla_device()\n\n\n"
            "if __name__ == '__main__':\n"
            "    xmp.spawn(_mp_fn)\n"
        ),
        # After training, in the launcher: the processes are gone.
        Valid(
            "import lightning as L\nimport torch_xla.runtime as xr\n\n\n"
            "def main():\n"
            "    trainer = L.Trainer(accelerator='tpu')\n"
            "    trainer.fit(Model())\n"
            "    print(xr.world_size())\n"
        ),
    )
    INVALID = (
        Invalid(
            "import lightning as L\nimport torch_xla.core.xla_model as xm\n\n"
            "device = xm.xla_device()\n",
            line=4,
            message="at import of this module",
        ),
        Invalid(
            "import lightning as L\nimport torch_xla.runtime as xr\n"
            "from torch.utils.data import DataLoader\n\n\n"
            "def main():\n"
            "    cores = xr.world_size()\n"
            "    trainer = L.Trainer(accelerator='tpu', devices=cores)\n"
            "    trainer.fit(Model())\n",
            line=7,
            message="in the launching code before `trainer.fit`",
        ),
        Invalid(
            "import lightning as L\nimport torch_xla\n\n\n"
            "if __name__ == '__main__':\n"
            "    print(torch_xla.device())\n"
            "    L.Trainer(accelerator='tpu').fit(Model())\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if ctx.qualify(node.func) not in _RUNTIME_CALLS or is_framework_file(ctx):
            return
        view = ctx.analysis.view
        if view is None or not _lightning_project(ctx.source, view):
            return  # Lightning spawns the processes: a plain torch_xla script is not its case
        if "lightning" not in ctx.source and view.model.standalone(view.path):
            # A program of its own beside the Lightning code (an inference app): it never
            # runs in a process that spawns, so one device in one process is its intended use.
            return
        position = launch_position(ctx, node)
        if position is None:
            return
        where = (
            "at import of this module (in the launching process too)"
            if position == "import"
            else "in the launching code before `trainer.fit`"
        )
        self.report(
            node,
            f"`{source_of(ctx, node)}` {where} starts the XLA runtime before Lightning spawns "
            'one process per TPU core: the spawn then fails ("Runtime is already '
            "initialized\"), and values read here are the launcher's (world size 1, ordinal "
            '0); use `self.device` in the module and `devices="auto"` on the Trainer',
        )


def _lightning_project(source: str, view: FileView) -> bool:
    """A file that names Lightning, or a project with Lightning classes."""
    return "lightning" in source or bool(view.model.lightning_table())
