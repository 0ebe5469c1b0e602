import torch


class BaseHead(torch.nn.Module):
    """Built only through its subclass, which inherits this forward."""

    def __init__(self, width):
        super().__init__()
        self.proj = torch.nn.Linear(width, 1)

    def forward(self, x):
        keep = x.sum(-1) != 0
        return self.proj(x[keep])


class MeanHead(BaseHead):
    pass


class AttentionHead(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = torch.nn.Linear(width, 1)

    def forward(self, x):
        if x.isnan().any():
            x = torch.nan_to_num(x)
        return self.proj(x)


class PooledHead(torch.nn.Module):
    """Selected by a shell script's override (`head=pooled`)."""

    def forward(self, x):
        return x[x.abs() > 0].mean()


class LegacyHead(torch.nn.Module):
    """In no registry and named nowhere: the one class here nothing builds."""

    def forward(self, x):
        return x[x > 0].sum()


# `head: attention` in the config selects AttentionHead, `mean` is named by the code and
# `pooled` by a shell script.
HEADS = {"mean": MeanHead, "attention": AttentionHead, "pooled": PooledHead}
DEFAULT_HEAD = "mean"
