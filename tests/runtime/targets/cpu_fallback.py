"""A training step with an op torch_xla has no lowering for (median over a dimension): it runs
on the CPU, every step."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class MedianCentered(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(32, 4)

    def training_step(self, batch, batch_idx):
        features, labels = batch
        logits = self.net(features)
        centered = logits - logits.median(dim=1).values[:, None]
        return F.cross_entropy(centered, labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        generator = torch.Generator().manual_seed(0)
        features = torch.randn(512, 32, generator=generator)
        dataset = TensorDataset(features, features[:, :4].argmax(dim=1))
        return DataLoader(dataset, batch_size=16, drop_last=True)
