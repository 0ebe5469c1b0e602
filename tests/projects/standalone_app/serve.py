"""A one-process scoring app: loads an exported model on one TPU core."""

import torch
import torch_xla.core.xla_model as xm

device = xm.xla_device()
scorer = torch.jit.load("ranker.pt").to(device)

if __name__ == "__main__":
    print(scorer(torch.ones(1, 16, device=device)).cpu())
