from torch import nn


class Component(nn.Module):
    """The base of every module of the package: the graph builders and the networks."""

    def describe(self):
        return type(self).__name__
