"""A library module: no script of the project builds a Trainer for it."""

import lightning as L
import torch
from torch import nn


class Regressor(L.LightningModule):
    def __init__(self, width: int = 64):
        super().__init__()
        self.out = nn.Linear(width, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.l1_loss(self.out(x).squeeze(-1), y)
        self.log("loss", loss, sync_dist=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)
