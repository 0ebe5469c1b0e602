import torch
from torch import nn


class Head(nn.Module):
    """A head chosen by configuration (built by a factory): its subclasses implement loss."""

    def loss(self, h, target):
        raise NotImplementedError


class BinaryHead(Head):
    def __init__(self, width):
        super().__init__()
        self.out = nn.Linear(width, 1)

    def loss(self, h, target):
        logits = self.out(h).squeeze(-1)
        assert not torch.any(torch.isnan(logits))
        return nn.functional.binary_cross_entropy_with_logits(logits, target)


HEADS = {"binary": BinaryHead}
