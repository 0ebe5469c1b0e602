"""`.item()` inside training_step: one device-to-host transfer per step (TPU101)."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class ItemModel(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
        self.running = 0.0

    def training_step(self, batch, batch_idx):
        features, labels = batch
        loss = F.cross_entropy(self.net(features), labels)
        self.running += loss.item()
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        generator = torch.Generator().manual_seed(0)
        features = torch.randn(512, 32, generator=generator)
        labels = features[:, :4].argmax(dim=1)
        return DataLoader(
            TensorDataset(features, labels), batch_size=16, shuffle=True, drop_last=True
        )
