"""Runs without enough evidence for a verdict.

* TooSmall: 64 samples over 8 cores is 8 per core, less than one batch of 16 with
  drop_last=True: no core trains a single step.
* OneBatch: one batch per core per epoch; verified with --epochs 1, even the epochs verify
  adds leave too few steps after warm-up to judge compile stability.
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_dataset(size: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(size, 32, generator=generator)
    return TensorDataset(features, features[:, :4].argmax(dim=1))


class TooSmall(L.LightningModule):
    samples = 64

    def __init__(self):
        super().__init__()
        self.net = nn.Linear(32, 4)

    def training_step(self, batch, batch_idx):
        features, labels = batch
        return F.cross_entropy(self.net(features), labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(make_dataset(self.samples), batch_size=16, drop_last=True)


class OneBatch(TooSmall):
    samples = 128
