"""A plain torch module: not something verify can train."""

from torch import nn


class PlainModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 2)
