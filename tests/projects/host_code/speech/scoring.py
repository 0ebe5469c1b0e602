import torch
from torch import nn


class EditDistance(nn.Module):
    """Built and called only at the end of a validation epoch."""

    def forward(self, hyp, ref):
        hyp, ref = hyp.cpu(), ref.cpu()
        return float((hyp != ref).sum().item()) / max(ref.numel(), 1)
