"""TPU501 removed-xla-api."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from tpulint.analysis.imports import dotted_name
from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.rule import ImportSpec, Invalid, Rule, Valid

from ..shared.configuration import (
    Rename,
    plan_renames,
    torch_xla_version,
    version_gated,
    version_tuple,
)
from ..shared.matchers import builds_lightning_object, source_of
from .helpers import _XM

_XR = ImportSpec("torch_xla.runtime", alias="xr")
_TORCH_XLA = ImportSpec("torch_xla")


@dataclass(frozen=True)
class _Api:
    old: str  # function name in torch_xla.core.xla_model
    new_module: str  # "xr" or "torch_xla"
    new_name: str
    since: str  # first torch_xla release with the replacement
    status: str  # what happened to the old name
    removed_in: str | None  # release that removed it (None: still there in 2.9)
    max_args: int  # arguments the replacement accepts


# Checked against the installed torch_xla 2.9 (torch_xla/core/xla_model.py): the first two
# are gone; `mark_step` (line 1030) and `xla_device` (line 121) are `@deprecated` wrappers
# that still work. `get_local_ordinal` (line 86) is kept, not deprecated: a plain wrapper of
# `runtime.local_ordinal()`, so it is not in the table.
_APIS = {
    "xrt_world_size": _Api("xrt_world_size", "xr", "world_size", "2.1", "removed", "2.7", 0),
    "get_ordinal": _Api("get_ordinal", "xr", "global_ordinal", "2.1", "removed", "2.7", 0),
    "mark_step": _Api("mark_step", "torch_xla", "sync", "2.4", "deprecated", None, 2),
    "xla_device": _Api("xla_device", "torch_xla", "device", "2.4", "deprecated", None, 1),
}

# Modules torch_xla 2.9 no longer has (ImportError), with what to use instead.
_REMOVED_MODULES = {
    "torch_xla.experimental.pjrt": (
        "`torch_xla.runtime` (`import torch_xla.runtime as xr`: `xr.world_size()`, "
        "`xr.global_ordinal()`, `xr.local_ordinal()`, `xr.device_type()`, "
        "`xr.global_device_count()`; PJRT is the only runtime, so `using_pjrt()` checks go)"
    ),
    "torch_xla.experimental.tpu": (
        "`torch_xla.runtime` for what a program needs (`xr.host_index()`, "
        "`xr.global_device_count()`); the TPU metadata helpers moved to the private "
        "`torch_xla._internal.tpu`"
    ),
    "torch_xla.experimental.xla_sharding": (
        "`torch_xla.distributed.spmd` (`import torch_xla.distributed.spmd as xs`)"
    ),
    "torch_xla.experimental.xla_sharded_tensor": (
        "`torch_xla.distributed.spmd` (`XLAShardedTensor`, `XLAShard`)"
    ),
}
_ENV_VARS = "torch_xla.core.xla_env_vars"
# XRT-era names of `torch_xla.core.xla_env_vars` that torch_xla 2.9 no longer defines
# (AttributeError), with the runtime query that replaces the value where there is one.
_REMOVED_ENV_VARS = {
    "HOST_ORDINAL": "`xr.host_index()`",
    "HOST_WORLD_SIZE": "`xr.process_count()` (processes) or the number of TPU workers",
    "ORDINAL": "`xr.global_ordinal()`",
    "LOCAL_ORDINAL": "`xr.local_ordinal()`",
    "MP_DEVICE": "`torch_xla.device()`",
    "TPU_CONFIG": "`PJRT_DEVICE=TPU` (XRT is gone)",
    "LOCAL_WORKER": "`xr.host_index()`",
    "WORKERS": "the PJRT runtime (XRT is gone)",
    "SERVICE_ADDRESS": "the PJRT runtime (XRT is gone)",
    "DEVICE_MAP": "the PJRT runtime (XRT is gone)",
    "TORCH_DIST_METHOD": "the PJRT runtime (XRT is gone)",
    "TORCH_DIST_ROOT": "the PJRT runtime (XRT is gone)",
    "GPU_NUM_DEVICES": "`PJRT_DEVICE=CUDA` with the devices the process sees",
}


def _api_message(api: _Api, code: str, version: tuple[int, ...]) -> str:
    new = f"{'xr' if api.new_module == 'xr' else 'torch_xla'}.{api.new_name}()"
    if api.removed_in is not None:
        if version >= version_tuple(api.removed_in):
            status = f"was removed in torch_xla {api.removed_in} (AttributeError)"
        else:
            status = f"is deprecated and removed in torch_xla {api.removed_in}"
    else:
        status = (
            "is deprecated in torch_xla 2.9 but still works (`@deprecated`: Python shows its "
            "DeprecationWarning once per call site, and only for code run as `__main__` unless "
            "warnings are turned on)"
        )
    return f"`{code}` {status}; use `{new}`"


class RemovedXlaApi(Rule):
    """
    ## What it does
    Finds torch_xla APIs that torch_xla 2.9 no longer has: the process helpers
    `xm.xrt_world_size()` and `xm.get_ordinal()` of `torch_xla.core.xla_model` (however it is
    imported: `import torch_xla.core.xla_model as xm`, `from torch_xla.core import
    xla_model`, `from torch_xla.core.xla_model import get_ordinal`; also where a function
    reads a global `xm` that the module imports only below it, as in an `if __name__ ==
    "__main__":` block under a TPU switch, since a function reads its globals when it
    runs), imports of the removed
    modules `torch_xla.experimental.pjrt`, `torch_xla.experimental.tpu`,
    `torch_xla.experimental.xla_sharding` and `torch_xla.experimental.xla_sharded_tensor`,
    and the XRT-era names of `torch_xla.core.xla_env_vars` (`HOST_ORDINAL`, `ORDINAL`,
    `LOCAL_ORDINAL`, `MP_DEVICE`, `TPU_CONFIG`...). Compatibility code that picks the API by
    version (`if _XLA_GREATER_EQUAL_2_1:` ... else, `hasattr` checks, `except
    AttributeError`, an old import tried first in a `try` whose `except ImportError` falls
    back) is not reported.

    In preview mode it also reports the deprecated `xm.mark_step()` and `xm.xla_device()`.
    `xm.get_local_ordinal()` is not reported: torch_xla 2.9 keeps it as a plain wrapper of
    `torch_xla.runtime.local_ordinal()`.

    ## Why is this bad on TPU?
    torch_xla 2.7 removed `xrt_world_size` and `get_ordinal` (code using them fails with
    `AttributeError`, often inside a `DistributedSampler(num_replicas=..., rank=...)` built
    for TPU cores); the PJRT helpers of `torch_xla.experimental.pjrt` moved to
    `torch_xla.runtime`, the SPMD API of `torch_xla.experimental.xla_sharding` to
    `torch_xla.distributed.spmd`, and `torch_xla.experimental.tpu` to the private
    `torch_xla._internal.tpu`, so importing them fails with `ImportError`; the XRT runtime and
    its environment variables are gone. The job dies before, or as soon as, it reaches the
    TPU. `mark_step` and `xla_device` still work in torch_xla 2.9 (wrapped in
    `@deprecated`, which warns through Python's `warnings`: once per call site, and for code
    outside `__main__` only when DeprecationWarnings are shown) in favour of
    `torch_xla.sync()` and `torch_xla.device()`.

    | old | new | new API available since |
    |---|---|---|
    | `xm.xrt_world_size()` | `xr.world_size()` | torch_xla 2.1 |
    | `xm.get_ordinal()` | `xr.global_ordinal()` | torch_xla 2.1 |
    | `torch_xla.experimental.pjrt` | `torch_xla.runtime` | torch_xla 2.1 |
    | `torch_xla.experimental.xla_sharding` | `torch_xla.distributed.spmd` | torch_xla 2.2 |
    | `xla_env_vars.HOST_ORDINAL` | `xr.host_index()` | torch_xla 2.1 |
    | `xm.mark_step()` (preview) | `torch_xla.sync()` | torch_xla 2.4 |
    | `xm.xla_device()` (preview) | `torch_xla.device()` | torch_xla 2.4 |

    (`xr` is `import torch_xla.runtime as xr`.)

    ## Example
    ```python
    import torch_xla.core.xla_model as xm
    from torch.utils.data.distributed import DistributedSampler


    def make_sampler(dataset):
        return DistributedSampler(
            dataset, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal()
        )
    ```

    ## Use instead
    ```python
    import torch_xla.runtime as xr
    from torch.utils.data.distributed import DistributedSampler


    def make_sampler(dataset):
        return DistributedSampler(
            dataset, num_replicas=xr.world_size(), rank=xr.global_ordinal()
        )
    ```

    ## Fix safety
    The fix is safe: each replacement is what the old function calls under PJRT (the only
    runtime since torch_xla 2.2). It adds `import torch_xla.runtime as xr` or
    `import torch_xla` next to the import of `xla_model` (inside the same `if`/`try`/function
    when that import is conditional, so importing the file stays possible without torch_xla),
    and drops the `xla_model` import once nothing uses it. It is gated on the configured
    `torch-xla-version` (default 2.9): nothing is reported for an API whose replacement the
    targeted release does not have (`xr.*` needs 2.1, `torch_xla.sync/device` need 2.4), so
    set `torch-xla-version = "2.3"` in `[tool.tpulint]` to keep `mark_step` on older
    installations. Calls with arguments the new API does not take (`xrt_world_size(defval)`,
    `xla_device(n, devkind)`) are reported without a fix, and so is a file where the name
    `xr` is already taken by another import.

    With TPU005 enabled, `xm.xla_device()` where a Lightning class is built is left to TPU005;
    with TPU105 enabled, `xm.mark_step()` inside Lightning hooks is left to TPU105 (remove it
    there).

    ## References
    - [pytorch/xla#7679: deprecate `xrt_world_size`](https://github.com/pytorch/xla/pull/7679)
    - [pytorch/xla#8915: API deprecation timeline](https://github.com/pytorch/xla/issues/8915)
    - [pytorch/xla#8862: replace `xm.mark_step` with `torch_xla.sync()`](https://github.com/pytorch/xla/issues/8862)
    - [huggingface/transformers#37301: `xrt_world_size` / `get_ordinal` gone in torch_xla 2.7](https://github.com/huggingface/transformers/issues/37301)
    - [torch_xla docs: PJRT runtime](https://github.com/pytorch/xla/blob/master/docs/source/learn/pjrt.md)
    - [torch_xla docs: SPMD (`torch_xla.distributed.spmd`)](https://github.com/pytorch/xla/blob/master/docs/source/perf/spmd_basic.md)

    ## Status
    Stable for the removed names: on code read after it was frozen (tpu1) every removed-API
    finding was right (5 of 5), and the batch's misses were more removed names
    (`torch_xla.experimental.pjrt` 6 times, `torch_xla.experimental.tpu`,
    `xla_env_vars.HOST_ORDINAL`), now in the table; every entry was checked against the
    installed torch_xla 2.9. The deprecated `mark_step` and `xla_device` are a preview shape
    (`--preview`): they were 17 of tpu1's 22 TPU501 findings, right about the deprecation but
    neither slow nor broken on torch_xla 2.9, which is what the default set is for.
    `get_local_ordinal`, kept by torch_xla 2.9, is no longer reported.
    """

    code = "TPU501"
    # Each removed name is its own break with its own replacement, even on one line.
    one_per_statement = False
    name = "removed-xla-api"
    summary = (
        "torch_xla APIs removed by 2.9 (`xm.xrt_world_size`, `xm.get_ordinal`, "
        "`torch_xla.experimental.pjrt`, XRT-era `xla_env_vars`); deprecated ones in preview"
    )
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    fix_sometimes = True
    fix_message = "Use the torch_xla runtime API"
    requires = (*_APIS, "torch_xla.experimental", "xla_env_vars")

    VALID = (
        Valid(
            "import torch_xla\nimport torch_xla.runtime as xr\n\n"
            "n = xr.world_size()\ntorch_xla.sync()\n"
        ),
        # Version-gated compatibility code (Lightning's XLAEnvironment shape).
        Valid(
            "_XLA_GREATER_EQUAL_2_1 = True\n\n\ndef world_size():\n"
            "    if _XLA_GREATER_EQUAL_2_1:\n"
            "        from torch_xla import runtime as xr\n\n"
            "        return xr.world_size()\n\n"
            "    import torch_xla.core.xla_model as xm\n\n"
            "    return xm.xrt_world_size()\n"
        ),
        Valid(
            "import torch_xla.core.xla_model as xm\n\n\ndef rank():\n"
            "    try:\n        import torch_xla.runtime as xr\n        return xr.global_ordinal()\n"
            "    except ImportError:\n        return xm.get_ordinal()\n"
        ),
        # The targeted torch_xla has no replacement yet.
        Valid(
            "import torch_xla.core.xla_model as xm\n\nxm.mark_step()\n",
            config={"torch-xla-version": "2.3"},
        ),
        # Another library's `get_ordinal`.
        Valid("from mylib.dist import get_ordinal\n\nrank = get_ordinal()\n"),
        # Kept in torch_xla 2.9: a plain wrapper of `runtime.local_ordinal()`.
        Valid("from torch_xla.core import xla_model\n\nprint(xla_model.get_local_ordinal())\n"),
        # Deprecated but working: a preview shape only.
        Valid(
            "import torch_xla.core.xla_model as xm\n\nxm.mark_step()\ndevice = xm.xla_device()\n"
        ),
        # The old module tried first, the new one on ImportError.
        Valid(
            "try:\n    import torch_xla.experimental.xla_sharding as xs\n"
            "except ImportError:\n    import torch_xla.distributed.spmd as xs\n"
        ),
        # torch_xla 2.9's own environment variables.
        Valid("import torch_xla.core.xla_env_vars as xenv\n\nkey = xenv.PJRT_DEVICE\n"),
        # A function's import binds nothing the other functions read.
        Valid(
            "def rank():\n    return xm.get_ordinal()\n\n\n"
            "def setup():\n    import torch_xla.core.xla_model as xm\n\n    return xm\n"
        ),
    )
    INVALID = (
        Invalid(
            "import torch_xla.core.xla_model as xm\n"
            "from torch.utils.data.distributed import DistributedSampler\n\n"
            "sampler = DistributedSampler(\n"
            "    ds, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal()\n"
            ")\n",
            expected_fix="import torch_xla.runtime as xr\n"
            "from torch.utils.data.distributed import DistributedSampler\n\n"
            "sampler = DistributedSampler(\n"
            "    ds, num_replicas=xr.world_size(), rank=xr.global_ordinal()\n"
            ")\n",
            count=2,
            line=5,
            applicability=Applicability.SAFE,
            message="removed in torch_xla 2.7",
        ),
        Invalid(
            "import torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "def train(model, loader, opt):\n"
            "    device = xm.xla_device()\n"
            "    model.to(device)\n"
            "    for x in loader:\n"
            "        opt.step()\n"
            "        xm.mark_step()\n",
            expected_fix="import torch\nimport torch_xla\n\n\n"
            "def train(model, loader, opt):\n"
            "    device = torch_xla.device()\n"
            "    model.to(device)\n"
            "    for x in loader:\n"
            "        opt.step()\n"
            "        torch_xla.sync()\n",
            count=2,
            message="is deprecated in torch_xla 2.9 but still works",
            config={"preview": True},
        ),
        # Removed modules: one finding per import.
        Invalid(
            "import torch_xla.experimental.pjrt as pjrt\n\nn = pjrt.world_size()\n",
            message="`torch_xla.experimental.pjrt` no longer exists in torch_xla 2.9",
        ),
        Invalid(
            "def world_size():\n"
            "    from torch_xla.experimental import pjrt\n\n"
            "    return pjrt.global_device_count()\n\n\n"
            "def rank():\n"
            "    from torch_xla.experimental.pjrt import global_ordinal\n\n"
            "    return global_ordinal()\n",
            count=2,
            line=2,
        ),
        Invalid(
            "import torch_xla.experimental.xla_sharding as xs\n\nxs.set_global_mesh(mesh)\n",
            message="`torch_xla.distributed.spmd`",
        ),
        Invalid(
            "from torch_xla.experimental import tpu\n\nenv = tpu.get_tpu_env()\n",
            message="torch_xla._internal.tpu",
        ),
        # XRT-era environment variable names.
        Invalid(
            "from torch_xla.core import xla_env_vars as xenv\n\n"
            "def node_rank():\n    return int(os.environ.get(xenv.HOST_ORDINAL, 0))\n",
            line=4,
            message="use `xr.host_index()`",
        ),
        Invalid(
            "from torch_xla.core.xla_model import get_ordinal, master_print\n\n"
            "if get_ordinal() == 0:\n    master_print('hi')\n",
            expected_fix="from torch_xla.core.xla_model import master_print\n"
            "import torch_xla.runtime as xr\n\n"
            "if xr.global_ordinal() == 0:\n    master_print('hi')\n",
        ),
        # A conditional import stays conditional; xm stays while other APIs use it.
        Invalid(
            "try:\n    import torch_xla.core.xla_model as xm\n"
            "except ImportError:\n    xm = None\n\n\n"
            "def rank():\n    return xm.get_ordinal() if xm else 0\n\n\n"
            "def report(msg):\n    xm.master_print(msg)\n",
            expected_fix="try:\n    import torch_xla.core.xla_model as xm\n"
            "    import torch_xla.runtime as xr\n"
            "except ImportError:\n    xm = None\n\n\n"
            "def rank():\n    return xr.global_ordinal() if xm else 0\n\n\n"
            "def report(msg):\n    xm.master_print(msg)\n",
        ),
        # An import inside a function.
        Invalid(
            "def world():\n    import torch_xla.core.xla_model as xm\n\n"
            "    return xm.xrt_world_size(), xm.get_ordinal()\n",
            count=2,
            expected_fix="def world():\n    import torch_xla.runtime as xr\n\n"
            "    return xr.world_size(), xr.global_ordinal()\n",
        ),
        # A suppressed call keeps the import it needs.
        Invalid(
            "def ranks():\n    import torch_xla.core.xla_model as xm\n\n"
            "    a = xm.get_ordinal()  # noqa: TPU501\n"
            "    return a, xm.xrt_world_size()\n",
            expected_fix="def ranks():\n    import torch_xla.core.xla_model as xm\n"
            "    import torch_xla.runtime as xr\n\n"
            "    a = xm.get_ordinal()  # noqa: TPU501\n"
            "    return a, xr.world_size()\n",
        ),
        # A method reads the global `xm` when it runs: the module's own launcher block
        # imports it below the class, under a TPU switch.
        Invalid(
            "class Data:\n    def sampler(self, ds):\n"
            "        if self.tpu:\n"
            "            return Sampler(ds, num_replicas=xm.xrt_world_size())\n"
            "        return None\n\n\n"
            "if __name__ == '__main__':\n    if use_tpu:\n"
            "        import torch_xla.core.xla_model as xm\n    run(Data())\n",
            line=4,
            expected_fix="class Data:\n    def sampler(self, ds):\n"
            "        if self.tpu:\n"
            "            return Sampler(ds, num_replicas=xr.world_size())\n"
            "        return None\n\n\n"
            "if __name__ == '__main__':\n    if use_tpu:\n"
            "        import torch_xla.runtime as xr\n    run(Data())\n",
        ),
        # Arguments the new API does not take: reported without a fix.
        Invalid(
            "import torch_xla.core.xla_model as xm\n\nn = xm.xrt_world_size(1)\n", message="removed"
        ),
        # torch_xla 2.5 targeted: still there, but deprecated.
        Invalid(
            "import torch_xla.core.xla_model as xm\n\nn = xm.xrt_world_size()\n",
            config={"torch-xla-version": "2.5"},
            message="is deprecated and removed in torch_xla 2.7",
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._renames: list[Rename] = []
        self._version = torch_xla_version(self.ctx)
        config = self.ctx.config
        enabled = getattr(config, "enabled", frozenset())
        self._defer_device = "TPU005" in enabled
        self._defer_sync = "TPU105" in enabled
        return None

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in _APIS:
            self._reference(node)
        elif node.attr.value in _REMOVED_ENV_VARS:
            self._env_var(node)

    # --- removed modules and XRT-era names ------------------------------------------------

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = dotted_name(alias.name)
            if name in _REMOVED_MODULES:
                self._removed_module(node, name)
                return

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        module = dotted_name(node.module)
        if module in _REMOVED_MODULES:
            self._removed_module(node, module)
            return
        if isinstance(node.names, cst.ImportStar):
            return
        if module == "torch_xla.experimental":
            for alias in node.names:
                name = f"{module}.{dotted_name(alias.name)}"
                if name in _REMOVED_MODULES:
                    self._removed_module(node, name)
                    return
        if module == _ENV_VARS:
            for alias in node.names:
                if dotted_name(alias.name) in _REMOVED_ENV_VARS:
                    self._env_var(alias.name)

    def _removed_module(self, node: cst.Import | cst.ImportFrom, module: str) -> None:
        if _tried(self.ctx, node) or version_gated(self.ctx, node):
            return  # `try: <old import> except ImportError: <new import>`
        self.report(
            node,
            f"`{module}` no longer exists in torch_xla 2.9 (ImportError): use "
            f"{_REMOVED_MODULES[module]}",
        )

    def _env_var(self, node: cst.Attribute | cst.Name) -> None:
        ctx = self.ctx
        if isinstance(node, cst.Attribute):
            qualified = ctx.qualify(node)
            if qualified is None or qualified.rpartition(".")[0] != _ENV_VARS:
                return
            name = node.attr.value
        else:
            name = node.value
        if version_gated(ctx, node):
            return
        self.report(
            node,
            f"`xla_env_vars.{name}` was an XRT-runtime variable; torch_xla 2.9 no longer "
            f"defines it (AttributeError): use {_REMOVED_ENV_VARS[name]}",
        )

    def visit_Name(self, node: cst.Name) -> None:
        if node.value not in _APIS:
            return
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return
        if isinstance(parent, (cst.ImportAlias, cst.FunctionDef, cst.Param)):
            return
        self._reference(node)

    def _reference(self, node: cst.Attribute | cst.Name) -> None:
        ctx = self.ctx
        qualified = ctx.qualify(node)
        if qualified is None or qualified.rpartition(".")[0] != _XM:
            return
        api = _APIS[qualified.rsplit(".", 1)[-1]]
        if self._version < version_tuple(api.since):
            return
        if api.removed_in is None and not self.preview_mode:
            # Deprecated but working on torch_xla 2.9: neither slow nor broken, so only in
            # preview (the rule's page, Status).
            return
        if any(isinstance(a, (cst.Import, cst.ImportFrom)) for a in ctx.ancestors(node)):
            return
        if version_gated(ctx, node):
            return
        if api.old == "xla_device" and self._defer_device and builds_lightning_object(ctx):
            return
        if api.old == "mark_step" and self._defer_sync and ctx.lightning_class is not None:
            return
        parent = ctx.parent(node)
        call = parent if isinstance(parent, cst.Call) and parent.func is node else None
        code = source_of(ctx, call if call is not None else node)
        message = _api_message(api, code, self._version)
        fixable = True
        if call is not None:
            if any(a.star for a in call.args) or len(call.args) > api.max_args:
                fixable = False
            if api.old == "xla_device" and any(
                a.keyword is not None and a.keyword.value == "devkind" for a in call.args
            ):
                fixable = False
        if api.new_module == "xr":
            new: cst.BaseExpression = cst.Attribute(cst.Name("xr"), cst.Name(api.new_name))
            needs: ImportSpec | None = _XR
        else:
            new = cst.Attribute(cst.Name("torch_xla"), cst.Name(api.new_name))
            needs = _TORCH_XLA
        local = _root(node)
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Attribute):
            # torch_xla.core.xla_model.mark_step(): `torch_xla` is already there.
            needs = None if local == "torch_xla" else needs
            if api.new_module == "xr" and local == "torch_xla":
                new = cst.parse_expression(f"torch_xla.runtime.{api.new_name}")
        self._renames.append(
            Rename(
                report_node=call if call is not None else node,
                old=node,
                new=new,
                local=local,
                needs=needs,
                message=message,
                applicability=Applicability.SAFE,
                fix_message=f"Use `{dotted_name(new)}()`",
                fixable=fixable,
                drop_old=local != "torch_xla",
            )
        )

    def leave_Module(self, node: cst.Module) -> None:
        if self._renames:
            plan_renames(self.ctx, self, self._renames)


def _tried(ctx, node: cst.CSTNode) -> bool:
    """An import in the body of a `try` whose handlers catch ImportError: the fallback runs
    when the old module is gone."""
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Try) and child is ancestor.body:
            for handler in ancestor.handlers:
                if handler.type is None:
                    return True
                text = ctx.module.code_for_node(handler.type)
                if "ImportError" in text or "ModuleNotFoundError" in text or "Exception" in text:
                    return True
            return False
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
            return False
        child = ancestor
    return False


def _root(node: cst.BaseExpression) -> str:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else ""
