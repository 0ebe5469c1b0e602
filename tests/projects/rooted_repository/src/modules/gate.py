"""A gate whose fused path only some constructions turn on, and one none does."""

import torch


class Gate(torch.nn.Module):
    def __init__(self, dim, fused=False, gated=False):
        super().__init__()
        self.fused = fused
        self.gated = gated
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x, lengths):
        if self.fused and lengths.sum() == 0:  # no construction turns `fused` on
            lengths = lengths + 1
        if self.gated and lengths.max() > 4:  # the classifier turns `gated` on
            x = x * 0.5
        return self.proj(x)
