"""Picks the device a run asks for."""

import torch


def pick_device(accelerator: str):
    if accelerator == "tpu":
        import torch_xla.core.xla_model as xm

        return xm.xla_device()
    return torch.device(accelerator)
