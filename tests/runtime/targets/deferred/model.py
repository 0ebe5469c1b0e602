"""A classifier whose per-step values are collected for the end of the epoch and read there by
the module itself, by a callback (callbacks.py) and by a metrics helper (metrics.py): `fix
--prove` must rewrite the producers and every reader together, in the three files, and prove
the result trains and ends every epoch the same (tests/runtime/test_deferral.py)."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from .callbacks import LossHistory


def _points(size: int, seed: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(size, 16, generator=generator)
    return TensorDataset(features, features[:, :4].argmax(dim=1))


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
        self.train_losses = []
        self.val_preds = []
        self.val_targets = []
        self.val_accuracy = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.train_losses.append(loss.item())
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        preds = self.net(x).argmax(dim=1)
        self.val_preds.append(preds.cpu())
        self.val_targets.append(y.cpu())

    def on_validation_epoch_end(self):
        preds = torch.cat(self.val_preds)
        targets = torch.cat(self.val_targets)
        self.val_accuracy.append(float((preds == targets).float().mean()))
        self.val_preds.clear()
        self.val_targets.clear()

    def on_train_epoch_end(self):
        self.train_losses.clear()

    def configure_callbacks(self):
        return [LossHistory()]

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(_points(512, 0), batch_size=8, shuffle=True, drop_last=True)

    def val_dataloader(self):
        return DataLoader(_points(128, 1), batch_size=8, drop_last=True)
