import torch
import torch_xla.core.xla_model as xm
from torch import nn


class Stack(nn.Module):
    """Layers that cut the graph every other layer (a mark_step inside the forward)."""

    def __init__(self, width, depth):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, h):
        for i, layer in enumerate(self.layers):
            h = layer(h).relu()
            if i % 2 == 1:
                xm.mark_step()
        return h

    def forward_checked(self, h):
        """The forward with a finiteness check after each layer (a debugging option)."""
        for layer in self.layers:
            h = layer(h).relu()
            assert torch.all(torch.isfinite(h))
        return h
