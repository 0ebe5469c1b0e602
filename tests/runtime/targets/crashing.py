"""A replica process that dies in the user's code: a native extension reads address 0 (here
through ctypes) on core 2 at its fourth batch. The process gets SIGSEGV; on a TPU the job
dies the same way."""

import ctypes

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_dataset(size: int = 512) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(size, 32, generator=generator)
    return TensorDataset(features, features[:, :4].argmax(dim=1))


def native_kernel(values):
    return ctypes.string_at(0)  # a bug in a native extension


class SegfaultInStep(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(32, 4)

    def training_step(self, batch, batch_idx):
        features, labels = batch
        if batch_idx == 3 and self.global_rank == 2:
            native_kernel(features)
        return F.cross_entropy(self.net(features), labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(make_dataset(), batch_size=16, drop_last=True)
