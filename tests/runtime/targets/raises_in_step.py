"""Core 3 raises in its second training step: a failure (exit 1) at the line that raised."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class RaisesModel(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(32, 4)

    def training_step(self, batch, batch_idx):
        features, labels = batch
        if batch_idx == 1 and self.global_rank == 3:
            raise ValueError(f"bad batch {batch_idx}")
        return F.cross_entropy(self.net(features), labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        generator = torch.Generator().manual_seed(0)
        features = torch.randn(256, 32, generator=generator)
        labels = features[:, :4].argmax(dim=1)
        return DataLoader(TensorDataset(features, labels), batch_size=16, drop_last=True)
