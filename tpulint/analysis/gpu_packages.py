"""Packages whose code cannot run on a TPU: those that exist only for NVIDIA GPUs (read by the
scope analysis: a branch that imports one is a GPU branch; and by TPU011: importing one fails on
a TPU VM), and those that import on a TPU VM but have no XLA backend (read by the scope
analysis only: a function that calls either kind cannot complete on a TPU)."""

from __future__ import annotations

# Packages that exist only for NVIDIA GPUs: CUDA kernels or bindings with no CPU or XLA
# build, so a TPU VM (no CUDA) cannot import them.
CUDA_ONLY_PACKAGES = {
    "flash_attn": "FlashAttention's CUDA kernels",
    "flash_attn_2_cuda": "FlashAttention's CUDA kernels",
    "xformers": "xFormers' CUDA kernels",
    "apex": "NVIDIA Apex (fused CUDA layers and optimizers)",
    "amp_C": "Apex's CUDA extension",
    "fused_layer_norm_cuda": "Apex's CUDA extension",
    "fused_adam_cuda": "Apex's CUDA extension",
    "bitsandbytes": "bitsandbytes' CUDA kernels",
    "rotary_emb": "FlashAttention's rotary CUDA extension",
    "dropout_layer_norm": "FlashAttention's layer-norm CUDA extension",
    "xentropy_cuda_lib": "FlashAttention's cross-entropy CUDA extension",
    "fused_dense_lib": "FlashAttention's fused-dense CUDA extension",
    "causal_conv1d": "a CUDA kernel package",
    "mamba_ssm": "Mamba's CUDA and Triton kernels",
    "transformer_engine": "NVIDIA Transformer Engine",
    "triton": "Triton, a GPU kernel compiler",
    "liger_kernel": "Liger's Triton kernels",
    "cupy": "CuPy, CUDA arrays",
    "pycuda": "PyCUDA",
    "tinycudann": "tiny-cuda-nn",
    "nvdiffrast": "nvdiffrast's CUDA rasteriser",
    "nvidia.dali": "NVIDIA DALI",
}

# Roots of the packages a branch imports only when it runs on a GPU: the CUDA-only packages
# above, and packages that need a GPU to do anything (NVML queries, DeepSpeed's engines).
GPU_BRANCH_ROOTS = frozenset(
    {*(name.split(".", 1)[0] for name in CUDA_ONLY_PACKAGES), "pynvml", "deepspeed"}
)

# Packages that import on a TPU VM but have no XLA backend: their tensors or graphs live only
# on the CPU or on CUDA devices, so model code built on them cannot run on an XLA device.
# DGL: `DGLGraph.to` moves a graph "to the targeted device (cpu/gpu)"
# (https://www.dgl.ai/dgl_docs/generated/dgl.DGLGraph.to.html), a graph accepts features only
# on its own device ("Using DGLGraph on a GPU", guide 1.6), and its kernels are built for the
# CPU and CUDA only. Not for TPU011: `import dgl` works on a TPU VM.
# NVIDIA Warp: "a single CPU device exposed as \"cpu\"" and "cuda:i" for each CUDA GPU are
# its devices (https://nvidia.github.io/warp/user_guide/devices.html); `wp.from_torch` wraps a
# tensor in place and `wp.device_from_torch` raises when a Torch device "does not have a
# corresponding Warp device" (https://nvidia.github.io/warp/api_reference/_generated/
# warp.device_from_torch.html): an XLA tensor has none. NVIDIA ALCHEMI Toolkit-Ops
# (`nvalchemiops`) provides its neighbor lists "via NVIDIA Warp" (https://nvidia.github.io/
# nvalchemi-toolkit-ops/userguide/components/neighborlist.html). Both install and import
# without CUDA (Warp's CPU device), so they are not for TPU011.
NO_XLA_PACKAGES = {
    "dgl": "DGL, whose graphs live on the CPU or CUDA devices only",
    "warp": "NVIDIA Warp, whose kernels run on the CPU or CUDA devices only",
    "nvalchemiops": "NVIDIA ALCHEMI Toolkit-Ops, Warp kernels for the CPU or CUDA devices only",
}

# Packages a call of which cannot complete on a TPU (the scope analysis: such a function's
# code is not on the TPU path): the CUDA-only packages and those with no XLA backend.
NO_TPU_CALL_PACKAGES = {**CUDA_ONLY_PACKAGES, **NO_XLA_PACKAGES}


def no_tpu_package(qualified: str) -> str | None:
    """What a qualified name's package is (`nvdiffrast.torch.rasterize`: "nvdiffrast's CUDA
    rasteriser") when a call of it cannot complete on a TPU; None otherwise."""
    for name, description in NO_TPU_CALL_PACKAGES.items():
        if qualified == name or qualified.startswith(name + "."):
            return description
    return None


def no_xla_package(qualified: str) -> str | None:
    """What a qualified name's package is when it has no XLA backend (`dgl.nn.GraphConv`:
    "DGL, whose graphs ..."); None otherwise."""
    for name, description in NO_XLA_PACKAGES.items():
        if qualified == name or qualified.startswith(name + "."):
            return description
    return None
