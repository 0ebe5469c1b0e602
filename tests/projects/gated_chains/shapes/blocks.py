from torch import nn

from .ops import squash


class LegacyBlock(nn.Module):
    # Nothing builds it (no code, config or string names it): its forward is found first, but
    # the finding in `squash` names the chain through `Block`, which the model builds.
    def forward(self, h):
        return squash(h)


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, h):
        return squash(self.proj(h))


class BaseHead(nn.Module):
    # Built through its subclass: its chain is named as found.
    def forward(self, h):
        return squash(h).sum()


class MeanHead(BaseHead):
    pass
