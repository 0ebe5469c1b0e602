from torch import nn


class DenseEncoder(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def encode(self, x):
        return self.proj(x)


class SparseEncoder(DenseEncoder):
    def encode(self, x):
        active = x.abs() > 0.1
        out = self.proj(x)
        out[~active] = 0.0
        return out
