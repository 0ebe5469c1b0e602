"""An IterableDataset split across cores by rank, unevenly: 996 samples strided over 8 ranks
give ranks 0 to 3 one sample more (125) than ranks 4 to 7 (124), so with batches of 25 (drop
the remainder) cores 0 to 3 get 5 batches and cores 4 to 7 get 4. On a TPU pod the job hangs
at the fifth step: cores 0 to 3 wait in the gradient all-reduce for cores 4 to 7."""

import lightning as L
import torch
import torch.nn.functional as F
import torch_xla.runtime as xr
from torch import nn
from torch.utils.data import DataLoader, IterableDataset


class StridedStream(IterableDataset):
    def __init__(self, size: int = 996):
        self.size = size

    def __iter__(self):
        rank, world = xr.global_ordinal(), xr.world_size()
        generator = torch.Generator().manual_seed(rank)
        for _ in range(rank, self.size, world):
            features = torch.randn(32, generator=generator)
            yield features, features[:4].argmax()


class UnevenStreamModel(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(32, 4)

    def training_step(self, batch, batch_idx):
        features, labels = batch
        return F.cross_entropy(self.net(features), labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(StridedStream(), batch_size=25, drop_last=True)
