"""A dataset that raises on one core's third batch, in the thread MpDeviceLoader reads the
DataLoader on: torch_xla only prints the exception and ends that core's epoch (on a TPU the
other cores then wait for it forever). verify names the exception at its line, not a core
that ran out of data."""

import lightning as L
import torch
import torch.nn.functional as F
import torch_xla.runtime as xr
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Records(Dataset):
    def __init__(self, size: int = 256):
        generator = torch.Generator().manual_seed(0)
        self.features = torch.randn(size, 32, generator=generator)
        self.read = 0

    def __len__(self):
        return len(self.features)

    def __getitem__(self, index):
        self.read += 1
        if xr.global_ordinal() == 2 and self.read > 32:  # core 2's third batch of 16
            raise ValueError(f"corrupt record {index}")
        return self.features[index], self.features[index, :4].argmax()


class CorruptRecord(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(32, 4)

    def training_step(self, batch, batch_idx):
        features, labels = batch
        return F.cross_entropy(self.net(features), labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(Records(), batch_size=16, drop_last=True)
