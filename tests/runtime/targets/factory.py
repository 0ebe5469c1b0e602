"""Zero-argument factories: verify calls them to get the module."""

from no_dataloader import NoDataModel


def make_model(lr: float = 0.1):
    return NoDataModel(lr=lr)


def make_nothing():
    return {"not": "a module"}
