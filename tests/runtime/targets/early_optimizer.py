"""A recipe-style module that builds its optimizer in `__init__`, over the parameters as they
are before Lightning moves the module to the XLA device. Moving a module to XLA replaces its
parameter tensors (CPU and XLA tensors cannot share storage), so the optimizer holds the old
CPU parameters and never updates the ones the model trains with."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_dataset(size: int = 512) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(size, 32, generator=generator)
    return TensorDataset(features, features[:, :4].argmax(dim=1))


class EarlyOptimizer(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
        self.optimizer = torch.optim.AdamW(self.parameters(), lr=1e-3)

    def training_step(self, batch, batch_idx):
        features, labels = batch
        return F.cross_entropy(self.net(features), labels)

    def configure_optimizers(self):
        return self.optimizer

    def train_dataloader(self):
        return DataLoader(make_dataset(), batch_size=16, drop_last=True)
