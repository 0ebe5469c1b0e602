import torch
from torchmetrics import Metric

# The scripts run from inside `forecast/`: its packages are imported by their short names.
from scoring.filters import observed_only


class HorizonError(Metric):
    def __init__(self):
        super().__init__()
        self.add_state("total", default=torch.tensor(0.0), dist_reduce_fx="sum")

    def update(self, pred, target, observed):
        pred, target = observed_only(pred, target, observed)
        self.total += (pred - target).abs().mean()

    def compute(self):
        return self.total
