import torch


class ScaleNorm(torch.nn.Module):
    """Built only under `use_scale_norm`, which every construction of Critic turns off."""

    def __init__(self, width):
        super().__init__()
        self.g = torch.nn.Parameter(torch.ones(1))

    def forward(self, x):
        norm = x.norm(dim=-1, keepdim=True)
        if norm.min() == 0:
            norm = norm + 1e-6
        return self.g * x / norm


class Critic(torch.nn.Module):
    def __init__(self, width, use_scale_norm=False):
        super().__init__()
        if use_scale_norm:
            self.norm = ScaleNorm(width)
        else:
            self.norm = torch.nn.LayerNorm(width)
        self.out = torch.nn.Linear(width, 1)

    def forward(self, x):
        return self.out(self.norm(x))
