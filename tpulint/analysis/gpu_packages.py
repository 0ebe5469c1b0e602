"""Packages that exist only for NVIDIA GPUs: one table, read by the scope analysis (a branch
that imports one is a GPU branch) and by TPU011 (importing one fails on a TPU VM)."""

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
