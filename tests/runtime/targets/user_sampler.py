"""A hand-built DistributedSampler with num_replicas=1: Lightning keeps it (TPU301)."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class UserSamplerModel(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        features, labels = batch
        return F.cross_entropy(self.net(features), labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        generator = torch.Generator().manual_seed(0)
        features = torch.randn(128, 32, generator=generator)
        labels = features[:, :4].argmax(dim=1)
        dataset = TensorDataset(features, labels)
        sampler = DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True)
        return DataLoader(dataset, batch_size=16, sampler=sampler, drop_last=True)
