"""Core 0 blocks in Python in its second step; the other cores wait for it forever."""

import threading

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

NEVER = threading.Event()


class StuckCoreModel(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        features, labels = batch
        if self.global_rank == 0 and batch_idx == 1:
            NEVER.wait()
        return F.cross_entropy(self.net(features), labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        generator = torch.Generator().manual_seed(0)
        features = torch.randn(256, 32, generator=generator)
        labels = features[:, :4].argmax(dim=1)
        return DataLoader(
            TensorDataset(features, labels), batch_size=16, shuffle=True, drop_last=True
        )
