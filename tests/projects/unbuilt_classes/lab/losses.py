import torch


class SoftLoss(torch.nn.Module):
    def forward(self, h, y):
        return torch.nn.functional.cross_entropy(h, y)


def count_hard(losses):
    """Called only by HardMiningLoss: not per-step code through it."""
    return (losses > 1).sum().item()


class HardMiningLoss(torch.nn.Module):
    """Nothing in the project builds it (an older loss kept in the file)."""

    def forward(self, h, y):
        losses = torch.nn.functional.cross_entropy(h, y, reduction="none")
        self.hard = count_hard(losses)
        return losses[losses > losses.mean()].mean()


class FocalLoss(torch.nn.Module):
    """Built by the tests only."""

    def forward(self, h, y):
        if y.sum() == 0:
            return h.sum() * 0
        return torch.nn.functional.cross_entropy(h, y)


class MarginHelper(torch.nn.Module):
    """Built only by HardMiningLoss's sibling below, which nothing builds either."""

    def forward(self, d):
        return d[d > 0].sum()


class TripletLoss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.margin = MarginHelper()

    def forward(self, a, p, n):
        return self.margin((a - p).norm(dim=-1) - (a - n).norm(dim=-1))
