"""A base LightningModule that builds the metrics every task logs (the repository's root
folder has an `__init__.py`, and its code imports `src.models...` from that root)."""

import lightning as L
from torchmetrics import MeanMetric


class TaskModule(L.LightningModule):
    def __init__(self, evaluator=None):
        super().__init__()
        if evaluator is not None:
            for name, metric in evaluator.metrics.items():
                setattr(self, name, metric)
        self.train_loss = MeanMetric(nan_strategy="disable")
        self.train_entropy = MeanMetric(nan_strategy="disable")
