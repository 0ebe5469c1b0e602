"""A Python list indexed by a device tensor: `list.__getitem__` asks the tensor for an index,
which reads it back to the host once per step, at this line."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_dataset(size: int = 512) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(size, 32, generator=generator)
    return TensorDataset(features, features[:, :4].argmax(dim=1))


class ListIndexedByTensor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(32, 4) for _ in range(3)])
        self.temperatures = [1.0, 0.5, 2.0]
        self.register_buffer("which", torch.tensor(1))

    def training_step(self, batch, batch_idx):
        features, labels = batch
        temperature = self.temperatures[self.which]
        logits = self.heads[0](features) / temperature
        return F.cross_entropy(logits, labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(make_dataset(), batch_size=16, drop_last=True)


class SizeFromDevice(L.LightningModule):
    """A tensor on the device used as a size: torch reads it back in C++ to build the shape,
    once per step, at this line (no Python `int()` or `.item()` to see)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Linear(32, 4)
        self.register_buffer("extra", torch.tensor(2))

    def training_step(self, batch, batch_idx):
        features, labels = batch
        padding = torch.zeros(self.extra, 32, device=features.device)
        logits = self.net(torch.cat([features, padding]))[: features.shape[0]]
        return F.cross_entropy(logits, labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(make_dataset(), batch_size=16, drop_last=True)
