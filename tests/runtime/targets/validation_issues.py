"""A clean training step, and a validation (and test) step with three TPU problems: a boolean
mask, a `.item()`, and a ragged last batch (200 samples over 8 cores are 25 per core: a
batch of 16, then one of 9)."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_dataset(size: int, seed: int = 0) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(size, 32, generator=generator)
    labels = features[:, :4].argmax(dim=1)
    labels[torch.rand(size, generator=generator) < 0.3] = -1  # unlabeled
    return TensorDataset(features, labels)


class ValidationIssues(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        features, labels = batch
        loss = F.cross_entropy(self.net(features), labels.clamp(min=0))
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        features, labels = batch
        logits = self.net(features)
        labeled = labels >= 0
        loss = F.cross_entropy(logits[labeled], labels[labeled])
        accuracy = (logits.argmax(dim=1) == labels).float().mean().item()
        self.log("val_loss", loss)
        self.log("val_acc", accuracy)

    def test_step(self, batch, batch_idx):
        features, labels = batch
        self.log("test_acc", (self.net(features).argmax(dim=1) == labels).float().mean().item())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(make_dataset(512), batch_size=16, shuffle=True, drop_last=True)

    def val_dataloader(self):
        return DataLoader(make_dataset(200, seed=1), batch_size=16)

    def test_dataloader(self):
        return DataLoader(make_dataset(200, seed=2), batch_size=16)
