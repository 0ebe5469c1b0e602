"""A LightningModule that leaves the data to a DataModule it does not name."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn


class NoDataModel(L.LightningModule):
    def __init__(self, lr: float = 0.1):
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        features, labels = batch
        return F.cross_entropy(self.net(features), labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)
