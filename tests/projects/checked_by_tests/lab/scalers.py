import torch


class SharedScaler(torch.nn.Module):
    """Built by training and by the tests."""

    def forward(self, x):
        keep = x.abs().sum(-1) > 0
        return x[keep] / x[keep].std()


class MeanScaler(torch.nn.Module):
    """Built only by the tests."""

    def forward(self, x):
        scale = x.abs().mean(-1, keepdim=True)
        scale[scale == 0] = 1.0
        return x / scale


def clip_scale(x):
    # called only by the tests
    if x.max() > 10:
        return x.clamp(max=10)
    return x
