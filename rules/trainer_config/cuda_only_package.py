"""TPU011 cuda-only-package."""

from __future__ import annotations

import re

import libcst as cst

from tpulint.analysis.gpu_packages import CUDA_ONLY_PACKAGES
from tpulint.analysis.imports import dotted_name
from tpulint.analysis.project import FileView
from tpulint.datatypes.diagnostics import Severity
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.configuration import is_framework_file, version_gated

_KERNEL_MODULE = re.compile(r"^\s*@triton\.(jit|autotune|heuristics)\b", re.MULTILINE)
_IMPORT_ERRORS = ("ImportError", "ModuleNotFoundError", "Exception", "OSError", "RuntimeError")


def _package(module: str) -> str | None:
    for name in CUDA_ONLY_PACKAGES:
        if module == name or module.startswith(name + "."):
            return name
    return None


class CudaOnlyPackage(Rule):
    """
    ## What it does
    Finds unconditional imports of packages that exist only for NVIDIA GPUs (`flash_attn`,
    `xformers`, `apex`, `bitsandbytes`, Triton and Triton-based kernels, FlashAttention's
    CUDA extensions such as `rotary_emb` and `dropout_layer_norm`, Transformer Engine,
    CuPy...) in files that hold training code (a Lightning class, or code that runs every
    step). Imports inside `try` blocks that catch ImportError, under an `if` (an availability
    flag or a CUDA check), or in version-gated compatibility code are not reported, and
    neither is `triton` in a module of Triton kernels (`@triton.jit`): its importers decide
    whether it is loaded.

    ## Why is this bad on TPU?
    A TPU VM has no CUDA: these packages either are not installable there or fail to load
    their CUDA libraries, so importing the model module raises ImportError (or OSError) and
    the job never starts. The layers they provide (FlashAttention, fused layer norms, fused
    optimizers, Triton kernels) have PyTorch or torch_xla equivalents that XLA compiles for
    the TPU: `torch.nn.functional.scaled_dot_product_attention`, `nn.LayerNorm`/`RMSNorm`,
    `torch.optim.AdamW`, and torch_xla's Pallas flash attention.

    ## Example
    ```python
    import torch
    from flash_attn import flash_attn_func
    from torch import nn


    class Attention(nn.Module):
        def forward(self, q, k, v):
            return flash_attn_func(q, k, v, causal=True)
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn


    class Attention(nn.Module):
        def forward(self, q, k, v):
            return nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    ```

    ## Fix safety
    No automatic fix: the replacement layer has its own signature and numerics.

    ## References
    - [FlashAttention: requirements (CUDA)](https://github.com/Dao-AILab/flash-attention#installation-and-features)
    - [PyTorch docs: `scaled_dot_product_attention`](https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html)
    - [torch_xla docs: Pallas kernels (flash attention on TPU)](https://github.com/pytorch/xla/blob/master/docs/source/features/pallas.md)

    ## Status
    Preview (new in issue 21). It comes from six misses of the tpu1 batch (`flash_attn`,
    `xformers.ops`, `rotary_emb`, `dropout_layer_norm` and `xentropy_cuda_lib` imported by
    the model and loss a TPU script trains). Whether the importing module is on the TPU path
    is for the scope analysis to tell; until a fresh batch shows its precision it stays in
    preview.
    """

    code = "TPU011"
    name = "cuda-only-package"
    summary = "Import of a CUDA-only package (`flash_attn`, `xformers`, `apex`) in training code"
    severity = Severity.ERROR
    preview = True
    requires = tuple(name.split(".", 1)[0] for name in CUDA_ONLY_PACKAGES)

    @classmethod
    def applies(cls, source: str, view: FileView) -> bool:
        return _training_code(view)

    VALID = (
        Valid(
            "import torch\nfrom torch import nn\n\ntry:\n    import flash_attn\n"
            "except ImportError:\n    flash_attn = None\n\n\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        return x\n"
        ),
        Valid(
            "import torch\nfrom torch import nn\n\nif torch.cuda.is_available():\n"
            "    from xformers.ops import memory_efficient_attention\n\n\n"
            "class M(nn.Module):\n    def forward(self, x):\n        return x\n"
        ),
        # A module of Triton kernels: GPU code by design, imported by others under a check.
        Valid(
            "import torch\nimport triton\nimport triton.language as tl\n\n\n"
            "@triton.jit\ndef _kernel(x_ptr):\n    pass\n\n\n"
            "class Op(torch.autograd.Function):\n    @staticmethod\n"
            "    def forward(ctx, x):\n        return x\n"
        ),
        # A file without training code (a benchmark helper).
        Valid("import triton\n\n\ndef bench():\n    return triton.testing.do_bench(lambda: 0)\n"),
        # A package whose name only starts the same.
        Valid(
            "import apex_utils\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        return x\n"
        ),
    )
    INVALID = (
        Invalid(
            "import torch\nfrom flash_attn import flash_attn_func\nfrom torch import nn\n\n\n"
            "class Attention(nn.Module):\n    def forward(self, q, k, v):\n"
            "        return flash_attn_func(q, k, v, causal=True)\n",
            line=2,
            message="FlashAttention's CUDA kernels",
        ),
        Invalid(
            "import rotary_emb\nimport dropout_layer_norm\nfrom torch import nn\n\n\n"
            "class Block(nn.Module):\n    def forward(self, x):\n        return x\n",
            count=2,
        ),
        # Imported inside the step.
        Invalid(
            "import lightning as L\n\n\nclass Model(L.LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        from xformers.ops import memory_efficient_attention\n"
            "        return memory_efficient_attention(batch, batch, batch).sum()\n",
            line=6,
        ),
    )

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            package = _package(dotted_name(alias.name) or "")
            if package is not None:
                self._report(node, dotted_name(alias.name) or package, package)
                return

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        module = dotted_name(node.module) or ""
        package = _package(module)
        if package is not None:
            self._report(node, module, package)

    def _report(self, node: cst.CSTNode, module: str, package: str) -> None:
        ctx = self.ctx
        view = ctx.analysis.view
        if view is not None and not _training_code(view):
            return  # a file without training code (a benchmark helper, a kernel library)
        if is_framework_file(ctx) or _guarded(ctx, node) or version_gated(ctx, node):
            return
        if package in ("triton", "liger_kernel") and _KERNEL_MODULE.search(ctx.source):
            # A module of Triton kernels (`@triton.jit`): GPU code by design; whether it is
            # imported on a TPU path is its importers' business.
            return
        self.report(
            node,
            f"`{module}` is {CUDA_ONLY_PACKAGES[package]}: a TPU VM has no CUDA, so importing "
            "this module fails (ImportError) before training starts; use a PyTorch or "
            "torch_xla layer (`scaled_dot_product_attention`, `nn.LayerNorm`, "
            "`torch.optim.AdamW`) or import it only when CUDA is available",
        )


def _training_code(view: FileView) -> bool:
    """Whether the file holds training code: hot code or a Lightning class (the rule's
    logic, which its screen `applies` repeats)."""
    return view.has_hot_code or view.has_lightning_class


def _guarded(ctx, node: cst.CSTNode) -> bool:
    """Inside an `if` (an availability flag, a CUDA check) or a `try` that catches the
    import's failure."""
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.If, cst.IfExp)):
            return True
        if isinstance(ancestor, cst.Try) and child is ancestor.body:
            for handler in ancestor.handlers:
                if handler.type is None:
                    return True
                text = ctx.module.code_for_node(handler.type)
                if any(name in text for name in _IMPORT_ERRORS):
                    return True
        child = ancestor
    return False
