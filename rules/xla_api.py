"""TPU5xx: torch_xla API usage and deprecations."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from tpulint.analysis.imports import dotted_name
from tpulint.analysis.project import ClassKind, FileView
from tpulint.diagnostics import Applicability, Severity
from tpulint.rule import ImportSpec, Invalid, Rule, Valid

from ._common import launch_position, source_of
from ._config_helpers import (
    Rename,
    imports_torch_xla,
    is_framework_file,
    plan_renames,
    torch_xla_version,
    version_gated,
    version_tuple,
)

_XM = "torch_xla.core.xla_model"
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


_APIS = {
    "xrt_world_size": _Api("xrt_world_size", "xr", "world_size", "2.1", "removed", "2.7", 0),
    "get_ordinal": _Api("get_ordinal", "xr", "global_ordinal", "2.1", "removed", "2.7", 0),
    "get_local_ordinal": _Api("get_local_ordinal", "xr", "local_ordinal", "2.1", "legacy", None, 0),
    "mark_step": _Api("mark_step", "torch_xla", "sync", "2.4", "deprecated", None, 2),
    "xla_device": _Api("xla_device", "torch_xla", "device", "2.4", "deprecated", None, 1),
}


def _api_message(api: _Api, code: str, version: tuple[int, ...]) -> str:
    new = f"{'xr' if api.new_module == 'xr' else 'torch_xla'}.{api.new_name}()"
    if api.removed_in is not None:
        if version >= version_tuple(api.removed_in):
            status = f"was removed in torch_xla {api.removed_in} (AttributeError)"
        else:
            status = f"is deprecated and removed in torch_xla {api.removed_in}"
    elif api.status == "deprecated":
        status = "is deprecated (torch_xla 2.9 marks it `@deprecated` and warns on every call)"
    else:
        status = (
            "is a legacy alias kept in `xla_model` (its siblings `xrt_world_size` and "
            "`get_ordinal` were removed in torch_xla 2.7)"
        )
    return f"`{code}` {status}; use `{new}`"


class RemovedXlaApi(Rule):
    """
    ## What it does
    Finds the process and device helpers of `torch_xla.core.xla_model` that torch_xla
    replaced by the runtime and top-level APIs: `xm.xrt_world_size()`, `xm.get_ordinal()`,
    `xm.get_local_ordinal()`, `xm.mark_step()` and `xm.xla_device()`, however `xla_model` is
    imported (`import torch_xla.core.xla_model as xm`,
    `from torch_xla.core import xla_model`, `from torch_xla.core.xla_model import
    get_ordinal`). Compatibility code that picks the API by version (`if
    _XLA_GREATER_EQUAL_2_1:` ... else, `hasattr` checks, `except AttributeError`) is not
    reported.

    ## Why is this bad on TPU?
    torch_xla 2.7 removed `xrt_world_size` and `get_ordinal` (code using them fails with
    `AttributeError`, often inside a `DistributedSampler(num_replicas=..., rank=...)` built
    for TPU cores); `mark_step` and `xla_device` are deprecated (torch_xla 2.9 wraps them in
    `@deprecated` and warns on every call) in favour of `torch_xla.sync()` and
    `torch_xla.device()`; `get_local_ordinal` is a legacy alias of `xr.local_ordinal()`.

    | old | new | new API available since |
    |---|---|---|
    | `xm.xrt_world_size()` | `xr.world_size()` | torch_xla 2.1 |
    | `xm.get_ordinal()` | `xr.global_ordinal()` | torch_xla 2.1 |
    | `xm.get_local_ordinal()` | `xr.local_ordinal()` | torch_xla 2.1 |
    | `xm.mark_step()` | `torch_xla.sync()` | torch_xla 2.4 |
    | `xm.xla_device()` | `torch_xla.device()` | torch_xla 2.4 |

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

    With TPU005 enabled, `xm.xla_device()` inside Lightning classes is left to TPU005 (use
    `self.device` there); with TPU105 enabled, `xm.mark_step()` inside Lightning hooks is left
    to TPU105 (remove it there).

    ## References
    - [pytorch/xla#7679: deprecate `xrt_world_size`](https://github.com/pytorch/xla/pull/7679)
    - [pytorch/xla#8915: API deprecation timeline](https://github.com/pytorch/xla/issues/8915)
    - [pytorch/xla#8862: replace `xm.mark_step` with `torch_xla.sync()`](https://github.com/pytorch/xla/issues/8862)
    - [huggingface/transformers#37301: `xrt_world_size` / `get_ordinal` gone in torch_xla 2.7](https://github.com/huggingface/transformers/issues/37301)
    - [torch_xla docs: PJRT runtime](https://github.com/pytorch/xla/blob/master/docs/source/learn/pjrt.md)
    """

    code = "TPU501"
    name = "removed-xla-api"
    summary = (
        "Removed or deprecated `xla_model` APIs (`xrt_world_size`, `get_ordinal`, `mark_step`, "
        "`xla_device`)"
    )
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    fix_sometimes = True
    fix_message = "Use the torch_xla runtime API"
    requires = tuple(_APIS)

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
            message="is deprecated",
        ),
        Invalid(
            "from torch_xla.core import xla_model\n\nprint(xla_model.get_local_ordinal())\n",
            expected_fix="import torch_xla.runtime as xr\n\nprint(xr.local_ordinal())\n",
            message="legacy alias",
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
        if any(isinstance(a, (cst.Import, cst.ImportFrom)) for a in ctx.ancestors(node)):
            return
        if version_gated(ctx, node):
            return
        if api.old == "xla_device" and self._defer_device and ctx.lightning_class is not None:
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


def _root(node: cst.BaseExpression) -> str:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else ""


# --- TPU502 --------------------------------------------------------------------------------


class RemovedPostMoveHook(Rule):
    """
    ## What it does
    Finds `on_post_move_to_device` methods in LightningModules.

    ## Why is this bad on TPU?
    Lightning 1.5 added the hook so TPU users could re-tie shared weights after the module
    moved to the XLA device (moving broke the tie into two independent copies). Lightning
    1.7 removed it (#13548): Lightning now re-ties weights itself after the move, and never
    calls the method, so whatever it does is dead code; if it did more than tying, that work
    silently stopped happening.

    ## Example
    ```python
    import lightning as L
    import torch


    class LM(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(100, 32)
            self.head = torch.nn.Linear(32, 100)
            self.head.weight = self.embed.weight

        def on_post_move_to_device(self):
            self.head.weight = self.embed.weight
    ```

    ## Use instead
    ```python
    import lightning as L
    import torch


    class LM(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(100, 32)
            self.head = torch.nn.Linear(32, 100)
            self.head.weight = self.embed.weight
    ```

    ## Fix safety
    Display-only: the suggestion deletes the method, which is right when it only re-ties
    weights (tie them in `__init__`, as above); anything else it did has to move to a hook
    that still exists, such as `on_fit_start`.

    ## References
    - [Lightning 1.7 changelog: removed `on_post_move_to_device` (#13548)](https://github.com/Lightning-AI/pytorch-lightning/pull/13548)
    - [Lightning docs: TPU advanced (weight sharing)](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_advanced.html)
    - [torch_xla troubleshooting: XLA tensor quirks (weight tying after the move)](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    """

    code = "TPU502"
    name = "removed-post-move-hook"
    summary = "`on_post_move_to_device` hook, never called since Lightning 1.7"
    severity = Severity.WARNING
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_message = "Delete the hook (tie weights in `__init__`)"
    requires = ("on_post_move_to_device",)

    VALID = (
        Valid(
            "import torch\n\n\nclass Block(torch.nn.Module):\n    def forward(self, x):\n"
            "        return x\n"
        ),
        # Lightning 1.x is targeted: the hook is still called there (until 1.7).
        Valid(
            "import pytorch_lightning as pl\n\n\nclass LM(pl.LightningModule):\n"
            "    def on_post_move_to_device(self):\n        pass\n",
            config={"lightning-version": "1.6"},
        ),
        # Not a Lightning class.
        Valid("class Wrapper:\n    def on_post_move_to_device(self):\n        pass\n"),
    )
    INVALID = (
        Invalid(
            "import pytorch_lightning as pl\n\n\nclass LM(pl.LightningModule):\n"
            "    def on_post_move_to_device(self):\n"
            "        self.head.weight = self.embed.weight\n\n"
            "    def forward(self, x):\n        return x\n",
            line=5,
            message="removed in Lightning 1.7",
            expected_suggestion="import pytorch_lightning as pl\n\n\n"
            "class LM(pl.LightningModule):\n"
            "\n    def forward(self, x):\n        return x\n",
        ),
    )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        ctx = self.ctx
        if node.name.value != "on_post_move_to_device" or is_framework_file(ctx):
            return
        from ._config_helpers import lightning_at_least

        if not lightning_at_least(ctx, "1.7"):
            return
        info = ctx.function
        klass = info.cls if info is not None else None
        if klass is None or not (klass.is_lightning or _looks_like_lightning_module(klass)):
            return
        message = (
            "`on_post_move_to_device` was removed in Lightning 1.7 and is never called; Lightning "
            "re-ties shared weights after moving to the TPU itself: tie them in `__init__` and "
            "delete this hook"
        )
        body = klass.node.body
        if isinstance(body, cst.IndentedBlock) and len(body.body) > 1:
            self.report(node.name, message, replacement=cst.RemovalSentinel.REMOVE, replaces=node)
        else:
            self.report(node.name, message)


def _looks_like_lightning_module(klass) -> bool:
    """A torch Module subclass with Lightning's own hooks (when the project index resolves
    LightningModule to Lightning's source, only TORCH_MODULE is known)."""
    return bool(klass.kind & ClassKind.TORCH_MODULE) and bool(
        {"training_step", "configure_optimizers", "validation_step"} & set(klass.methods)
    )


# --- TPU503 --------------------------------------------------------------------------------

_DEVICE_CALLS = frozenset(
    {"torch_xla.core.xla_model.xla_device", "torch_xla.device", "torch_xla.torch_xla.device"}
)


class SaveXlaTensorDirectly(Rule):
    """
    ## What it does
    Finds `torch.save(...)` of tensors or modules that the same function (or module) put on
    an XLA device, in torch_xla code outside Lightning classes: `model.to(device)` or
    `x = t.to(device)` with `device = xm.xla_device()` / `torch_xla.device()` /
    `torch.device("xla")`, then `torch.save(model.state_dict(), path)` or
    `torch.save(x, path)`. Lightning's checkpointing (`trainer.save_checkpoint`, the
    `ModelCheckpoint` callback) moves tensors to the CPU itself and is not concerned.

    ## Why is this bad on TPU?
    `torch.save` keeps the device of every tensor: a checkpoint of XLA tensors can only be
    loaded where an XLA device exists (loading it on a CPU-only machine, or before torch_xla
    is initialised, fails), and with several TPU processes every process writes the same
    file. torch_xla provides `xm.save(data, path)`, which moves the data to the CPU first
    and writes from the master process only.

    ## Example
    ```python
    import torch
    import torch_xla.core.xla_model as xm


    def train(model, path):
        device = xm.xla_device()
        model.to(device)
        torch.save(model.state_dict(), path)
    ```

    ## Use instead
    ```python
    import torch
    import torch_xla.core.xla_model as xm


    def train(model, path):
        device = xm.xla_device()
        model.to(device)
        xm.save(model.state_dict(), path)
    ```

    ## Fix safety
    Display-only: `xm.save` also changes who writes (only the master process by default),
    which matters if every process saved to its own path. Without an `xla_model` import the
    finding suggests nothing and the message names both remedies (`xm.save` or moving to the
    CPU with `.cpu()` first).

    ## References
    - [torch_xla docs: saving and loading XLA tensors](https://github.com/pytorch/xla/blob/master/docs/source/learn/pytorch-on-xla-devices.md)
    - [torch_xla troubleshooting: XLA tensor quirks](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    """

    code = "TPU503"
    name = "save-xla-tensor-directly"
    summary = "`torch.save` of tensors or modules placed on an XLA device"
    severity = Severity.WARNING
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_sometimes = True
    fix_message = "Use `xm.save` (moves to the CPU, writes once)"
    requires = ("torch.save", "save(")

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        return "torch_xla" in source  # only files that use torch_xla

    VALID = (
        # Saved from the CPU.
        Valid(
            "import torch\nimport torch_xla.core.xla_model as xm\n\n\ndef f(model, path):\n"
            "    device = xm.xla_device()\n    model.to(device)\n"
            "    torch.save(model.cpu().state_dict(), path)\n"
        ),
        # Nothing was put on the XLA device here.
        Valid(
            "import torch\nimport torch_xla\n\n\ndef f(model, path):\n"
            "    torch.save(model.state_dict(), path)\n"
        ),
        # Lightning code: checkpointing handles XLA tensors.
        Valid(
            "import lightning as L\nimport torch\nimport torch_xla\n\n\n"
            "class M(L.LightningModule):\n"
            "    def on_train_end(self):\n        x = torch.ones(2).to(torch_xla.device())\n"
            "        torch.save(x, 'x.pt')\n"
        ),
        # Not torch_xla code.
        Valid(
            "import torch\n\n\ndef f(model, path):\n    model.to('cuda')\n"
            "    torch.save(model.state_dict(), path)\n"
        ),
    )
    INVALID = (
        Invalid(
            "import torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "def train(model, path):\n"
            "    device = xm.xla_device()\n"
            "    model.to(device)\n"
            "    torch.save(model.state_dict(), path)\n",
            line=8,
            message="xm.save",
            expected_suggestion="import torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "def train(model, path):\n"
            "    device = xm.xla_device()\n"
            "    model.to(device)\n"
            "    xm.save(model.state_dict(), path)\n",
        ),
        Invalid(
            "import torch\nimport torch_xla\n\n\n"
            "def dump(batch, path):\n"
            "    x = batch.to(torch_xla.device())\n"
            "    torch.save({'x': x, 'step': 3}, path)\n",
            message=".cpu()",
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._enabled = not is_framework_file(self.ctx) and imports_torch_xla_text(self.ctx)
        self._scopes: list[tuple[set[str], set[str]]] = [(set(), set())]  # (devices, xla values)
        return None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append((set(), set()))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.pop()

    def _is_xla_device(self, node: cst.BaseExpression) -> bool:
        devices, _ = self._scopes[-1]
        if isinstance(node, cst.Name) and node.value in devices:
            return True
        if isinstance(node, cst.Call):
            qualified = self.ctx.qualify(node.func)
            if qualified in _DEVICE_CALLS:
                return True
            if qualified == "torch.device" and node.args:
                from tpulint.cst_helpers import string_value

                value = string_value(node.args[0].value)
                return value is not None and value.split(":", 1)[0] == "xla"
        return False

    def _to_xla(self, node: cst.BaseExpression) -> cst.BaseExpression | None:
        """For `x.to(<xla device>)`: `x`; else None."""
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "to"
            and node.args
            and self._is_xla_device(node.args[0].value)
        ):
            return node.func.value
        return None

    def _is_xla_value(self, node: cst.BaseExpression) -> bool:
        _, values = self._scopes[-1]
        if isinstance(node, cst.Name):
            return node.value in values
        if self._to_xla(node) is not None:
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            if method in ("cpu", "numpy", "tolist", "item"):
                return False
            if method in ("state_dict", "detach", "clone", "float", "half", "bfloat16"):
                return self._is_xla_value(node.func.value)
        if isinstance(node, cst.Dict):
            return any(
                isinstance(e, cst.DictElement) and self._is_xla_value(e.value)
                for e in node.elements
            )
        if isinstance(node, (cst.List, cst.Tuple)):
            return any(self._is_xla_value(e.value) for e in node.elements)
        return False

    def leave_Assign(self, node: cst.Assign) -> None:
        if not self._enabled:
            return
        devices, values = self._scopes[-1]
        for target in node.targets:
            if not isinstance(target.target, cst.Name):
                continue
            name = target.target.value
            if self._is_xla_device(node.value):
                devices.add(name)
            elif self._is_xla_value(node.value):
                values.add(name)
            else:
                devices.discard(name)
                values.discard(name)

    def visit_Expr(self, node: cst.Expr) -> None:
        if not self._enabled:
            return
        moved = self._to_xla(node.value)
        if isinstance(moved, cst.Name):  # `model.to(device)` moves a module in place
            self._scopes[-1][1].add(moved.value)

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not self._enabled or ctx.qualify(node.func) != "torch.save" or not node.args:
            return
        if ctx.lightning_class is not None:
            return
        data = node.args[0].value
        if not self._is_xla_value(data):
            return
        xm_local = next(
            (local for local, target in ctx.aliases.bindings.items() if target == _XM), None
        )
        head = (
            f"`{source_of(ctx, node)}` writes XLA tensors: the file can only be loaded where an "
            "XLA device exists, and every TPU process writes it"
        )
        if xm_local is not None:
            self.report(
                node,
                f"{head}; use `{xm_local}.save(...)` (moves to the CPU, writes from the master "
                "only)",
                replacement=node.with_changes(
                    func=cst.Attribute(cst.Name(xm_local), cst.Name("save"))
                ),
            )
        else:
            self.report(
                node,
                f"{head}; use `xm.save(...)` from `torch_xla.core.xla_model` or move the data to "
                "the CPU with `.cpu()` first",
            )


def imports_torch_xla_text(ctx) -> bool:
    """The file imports torch_xla (bindings are only complete at the end of the walk, so
    look at the text for the cheap answer and confirm on the module's imports)."""
    if "torch_xla" not in ctx.source:
        return False
    from ._config_helpers import import_bindings

    return any(
        b.target.split(".", 1)[0] == "torch_xla" for b in import_bindings(ctx)
    ) or imports_torch_xla(ctx)


# --- TPU504 -----------------------------------------------------------------------------

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
    Inside LightningModules these calls are TPU005's.

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

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        return "lightning" in source or bool(view.model.lightning_table())

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
