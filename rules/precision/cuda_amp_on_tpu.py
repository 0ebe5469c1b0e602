"""TPU402 cuda-amp-on-tpu."""

from __future__ import annotations

import ast

import libcst as cst

from tpulint.analysis.project import FileView
from tpulint.datatypes.diagnostics import Applicability, Severity
from tpulint.rule_api.cst_helpers import keyword_arg, string_value
from tpulint.rule_api.rule import Invalid, Rule, Valid, last_names

from ..shared.configuration import TpuFileScan, device_guarded, is_framework_file
from ..shared.matchers import source_of

_SCALERS = frozenset(
    {
        "torch.cuda.amp.GradScaler",
        "torch.cuda.amp.grad_scaler.GradScaler",
        "torch.amp.GradScaler",
        "torch.amp.grad_scaler.GradScaler",
    }
)
_CUDA_AUTOCASTS = frozenset({"torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"})
_GENERIC_AUTOCASTS = frozenset(
    {"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"}
)
_HALF_DTYPES = frozenset({"torch.float16", "torch.half"})
_FULL_DTYPES = frozenset({"torch.float32", "torch.float", "torch.float64", "torch.double"})


class CudaAmpOnTpu(Rule):
    """
    ## What it does
    Finds CUDA automatic mixed precision in code that targets TPUs:
    `torch.cuda.amp.GradScaler()` / `torch.amp.GradScaler("cuda")`,
    `torch.cuda.amp.autocast()` and `torch.autocast("cuda")` (also as decorators and
    `with` items). A file targets TPUs when it imports `torch_xla` or builds a Lightning
    Trainer for TPUs (`accelerator="tpu"`, `tpu_cores`, an XLA strategy); the same calls in
    GPU projects are right and are not reported. Code under a device check
    (`if torch.cuda.is_available():`, `if device.type == "cuda":`) and autocast regions that
    switch autocast off (`enabled=False`) or force float32 are not reported either.

    ## Why is this bad on TPU?
    CUDA autocast only affects CUDA tensors: on XLA tensors `torch.autocast("cuda")` does
    nothing, so the step silently runs in float32, at a fraction of the TPU's bfloat16
    throughput. Loss scaling exists for float16's narrow range: bfloat16 has float32's
    exponent range and needs none ("gradient scaling is not necessary" in torch_xla's AMP
    guide), and a CUDA `GradScaler` on a TPU host disables itself with a warning, leaving
    dead code around every backward and optimizer step.

    ## Example
    ```python
    import torch
    import torch_xla.core.xla_model as xm


    def train_step(model, batch, optimizer):
        with torch.autocast("cuda"):
            loss = model(batch)
        loss.backward()
        xm.optimizer_step(optimizer)
    ```

    ## Use instead
    ```python
    import torch
    import torch_xla.core.xla_model as xm


    def train_step(model, batch, optimizer):
        with torch.autocast("xla", dtype=torch.bfloat16):
            loss = model(batch)
        loss.backward()
        xm.optimizer_step(optimizer)
    ```

    ## Fix safety
    The fix rewrites a CUDA autocast to `torch.autocast("xla", dtype=torch.bfloat16)`
    (keeping `enabled=` and `cache_enabled=`; float16 becomes bfloat16) and is unsafe: the
    region now really runs in bfloat16 on the TPU, which changes the numerics. Gradient
    scalers are reported without a fix: removing one means rewriting
    `scaler.scale(loss).backward()`, `scaler.step(optimizer)` and `scaler.update()` into
    `loss.backward()` and `optimizer.step()` (or `xm.optimizer_step(optimizer)`), which
    depends on the training loop. In Lightning code, drop both and set
    `Trainer(precision="bf16-true")`.

    ## References
    - [torch_xla docs: automatic mixed precision (bf16 on TPU, no gradient scaling)](https://github.com/pytorch/xla/blob/master/docs/source/perf/amp.md)
    - [PyTorch docs: `torch.autocast` device types](https://pytorch.org/docs/stable/amp.html)
    - [Lightning docs: TPU precision ("bf16-true")](https://lightning.ai/docs/pytorch/stable/accelerators/tpu_intermediate.html)
    """

    code = "TPU402"
    name = "cuda-amp-on-tpu"
    summary = "CUDA autocast or `GradScaler` in code that targets TPUs"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    fix_sometimes = True
    fix_message = 'Use `torch.autocast("xla", dtype=torch.bfloat16)`'
    requires = ("GradScaler", "autocast")
    screen_calls = last_names(_SCALERS, _CUDA_AUTOCASTS, _GENERIC_AUTOCASTS)

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        # Only TPU code: a file that imports torch_xla or builds a TPU Trainer
        # (TpuFileScan: `Trainer(...)` or `Trainer.from_argparse_args(...)`).
        if not any(token in source for token in ("tpu", "TPU", "xla", "XLA")):
            return False
        syntax = view.module.syntax
        return (
            "torch_xla" in source
            or syntax is None
            or not syntax.calls.isdisjoint(("Trainer", "from_argparse_args"))
        )

    VALID = (
        # A GPU project: CUDA AMP is right there.
        Valid(
            "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n"
            'with torch.autocast("cuda"):\n    pass\n'
        ),
        # The TPU's branch imports XLA's own autocast under the same name.
        Valid(
            "import torch\n\n\ndef train(model, x, on_tpu):\n"
            "    if on_tpu:\n        from torch_xla.amp import autocast\n"
            "    else:\n        from torch.cuda.amp import autocast\n"
            "    with autocast(device=x.device):\n        return model(x)\n"
        ),
        # The same, with XLA's import parenthesised over lines and renamed.
        Valid(
            "import torch\n\n\ndef train(model, x, on_tpu):\n"
            "    if on_tpu:\n        from torch_xla.amp import (\n"
            "            GradScaler,\n            autocast as amp_autocast,\n        )\n"
            "    else:\n        from torch.cuda.amp import autocast as amp_autocast\n"
            "    with amp_autocast(device=x.device):\n        return model(x)\n"
        ),
        # Device-agnostic autocast.
        Valid(
            "import torch\nimport torch_xla\n\n\ndef step(model, x):\n"
            "    with torch.autocast(x.device.type, dtype=torch.bfloat16):\n"
            "        return model(x)\n"
        ),
        # Guarded by a device check.
        Valid(
            "import torch\nimport torch_xla\n\n"
            'scaler = torch.amp.GradScaler("cuda") if torch.cuda.is_available() else None\n'
        ),
        # Forcing float32 in a region.
        Valid(
            "import torch\nimport torch_xla\n\n\ndef f(x):\n"
            '    with torch.autocast("cuda", dtype=torch.float32):\n        return x @ x\n'
        ),
        # Switching autocast off (a float32 island) is harmless.
        Valid(
            "import torch\nimport torch_xla\n\n\ndef f(x):\n"
            "    with torch.cuda.amp.autocast(enabled=False):\n        return x.float()\n"
        ),
    )
    INVALID = (
        Invalid(
            "import torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "def train_step(model, batch, optimizer):\n"
            "    with torch.cuda.amp.autocast():\n"
            "        loss = model(batch)\n"
            "    loss.backward()\n",
            expected_fix="import torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "def train_step(model, batch, optimizer):\n"
            '    with torch.autocast("xla", dtype=torch.bfloat16):\n'
            "        loss = model(batch)\n"
            "    loss.backward()\n",
            line=6,
            applicability=Applicability.UNSAFE,
            message="does nothing",
        ),
        Invalid(
            "import torch\nimport torch_xla\n\n\n"
            "def f(model, x, use_amp):\n"
            "    with torch.autocast(device_type='cuda', dtype=torch.float16, enabled=use_amp):\n"
            "        return model(x)\n",
            expected_fix="import torch\nimport torch_xla\n\n\n"
            "def f(model, x, use_amp):\n"
            "    with torch.autocast('xla', dtype=torch.bfloat16, enabled=use_amp):\n"
            "        return model(x)\n",
        ),
        # torch.amp.GradScaler() defaults to "cuda".
        Invalid(
            "import torch\nimport torch_xla.core.xla_model as xm\n\n"
            "scaler = torch.amp.GradScaler()\n",
            message="GradScaler",
        ),
        # A TPU Lightning project with a hand-made scaler (no automatic fix).
        Invalid(
            "import lightning as L\nfrom torch.cuda.amp import GradScaler\n\n\n"
            "class Model(L.LightningModule):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.scaler = GradScaler()\n\n\n"
            'trainer = L.Trainer(accelerator="tpu", devices="auto")\n',
            line=8,
            message="bfloat16",
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._tpu_file = TpuFileScan()
        self._enabled = not is_framework_file(self.ctx)
        source = self.ctx.source
        self._xla_names = (
            _xla_imported_names(self.ctx.ast_tree) if "torch_xla" in source else frozenset()
        )
        return None

    def visit_Call(self, node: cst.Call) -> None:
        if not self._enabled:
            return
        ctx = self.ctx
        qualified = ctx.qualify(node.func)
        if qualified is None or not qualified.startswith("torch."):
            return
        if isinstance(node.func, cst.Name) and node.func.value in self._xla_names:
            # `if on_tpu: from torch_xla.amp import autocast` / `else: from torch.cuda.amp
            # import autocast`: the name is XLA's own on the TPU's branch
            return
        if qualified in _SCALERS:
            if qualified.startswith("torch.amp.") and not self._cuda_device_arg(node, default=True):
                return
            if not self._applies(node):
                return
            self.report(
                node,
                f"`{source_of(ctx, node)}` scales the loss for float16 on CUDA: TPUs train in "
                "bfloat16, which needs no loss scaling, and a CUDA GradScaler disables itself "
                "without a GPU; remove the scaler (`loss.backward()`, `optimizer.step()`), or in "
                'Lightning set `precision="bf16-true"`',
            )
            return
        cuda_autocast = qualified in _CUDA_AUTOCASTS
        if not cuda_autocast and not (
            qualified in _GENERIC_AUTOCASTS and self._cuda_device_arg(node, default=False)
        ):
            return
        enabled = keyword_arg(node, "enabled")
        if (
            enabled is not None
            and isinstance(enabled.value, cst.Name)
            and enabled.value.value == "False"
        ):
            return
        dtype = keyword_arg(node, "dtype")
        dtype_name = ctx.qualify(dtype.value) if dtype is not None else None
        if dtype_name in _FULL_DTYPES:
            return
        if not self._applies(node):
            return
        message = (
            f"`{source_of(ctx, node)}` does nothing for XLA tensors, so this region runs in "
            'float32 on the TPU; use `torch.autocast("xla", dtype=torch.bfloat16)`'
        )
        replacement = self._xla_autocast(node, cuda_autocast)
        if replacement is None:
            self.report(node, message)
        else:
            self.report(node, message, replacement=replacement)

    def _applies(self, node: cst.Call) -> bool:
        return self._tpu_file(self.ctx) and not device_guarded(self.ctx, node)

    def _cuda_device_arg(self, node: cst.Call, default: bool) -> bool:
        """The device type argument is "cuda" (or missing, when `default`)."""
        arg = keyword_arg(node, "device_type") or keyword_arg(node, "device")
        if arg is None:
            positional = [a for a in node.args if a.keyword is None and not a.star]
            arg = positional[0] if positional else None
        if arg is None:
            return default
        value = string_value(arg.value)
        return value is not None and value.split(":", 1)[0] == "cuda"

    def _xla_autocast(self, node: cst.Call, cuda_autocast: bool) -> cst.Call | None:
        ctx = self.ctx
        if ctx.aliases.bindings.get("torch") != "torch":
            return None
        if any(a.star for a in node.args):
            return None
        quote = "'"
        kept: list[cst.Arg] = []
        positional = [a for a in node.args if a.keyword is None]
        if not cuda_autocast and positional:
            device = positional[0].value
            if isinstance(device, cst.SimpleString) and device.value.startswith('"'):
                quote = '"'
        elif not cuda_autocast:
            device_kw = keyword_arg(node, "device_type")
            if (
                device_kw is not None
                and isinstance(device_kw.value, cst.SimpleString)
                and device_kw.value.value.startswith('"')
            ):
                quote = '"'
        else:
            quote = '"'
        rest_positional = positional[1:] if not cuda_autocast else positional
        if rest_positional:
            return None  # positional dtype/enabled: keep it simple
        dtype_set = False
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value in ("device_type",):
                continue
            if arg.keyword.value == "dtype":
                dtype_name = ctx.qualify(arg.value)
                if dtype_name in _HALF_DTYPES or dtype_name is None:
                    arg = arg.with_changes(value=cst.parse_expression("torch.bfloat16"))
                dtype_set = True
            kept.append(arg)
        new_args = [cst.Arg(cst.SimpleString(f"{quote}xla{quote}"))]
        if not dtype_set:
            new_args.append(
                cst.Arg(
                    cst.parse_expression("torch.bfloat16"),
                    keyword=cst.Name("dtype"),
                    equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
                )
            )
        new_args += [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in kept]
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        new_args = [a.with_changes(comma=comma) for a in new_args[:-1]] + [new_args[-1]]
        # dtype first, like the documented spelling.
        new_args.sort(
            key=lambda a: 0 if a.keyword is None else (1 if a.keyword.value == "dtype" else 2)
        )
        new_args = [a.with_changes(comma=comma) for a in new_args[:-1]] + [
            new_args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        ]
        return node.with_changes(func=cst.parse_expression("torch.autocast"), args=new_args)


def _xla_imported_names(tree: ast.Module | None) -> frozenset[str]:
    """The local names some `from torch_xla... import` of the file binds (`autocast`,
    `GradScaler` from `torch_xla.amp`), wherever it sits (in a branch, a function,
    parenthesised over several lines)."""
    if tree is None:
        return frozenset()
    return frozenset(
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.level == 0
        and (node.module or "").split(".", 1)[0] == "torch_xla"
        for alias in node.names
    )
