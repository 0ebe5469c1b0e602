"""A TPU-ready module: static shapes, tensors logged as tensors, drop_last, batch 16."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_dataset(size: int = 512, seed: int = 0) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(size, 32, generator=generator)
    labels = features[:, :4].argmax(dim=1)
    return TensorDataset(features, labels)


class CleanModel(L.LightningModule):
    def __init__(self, lr: float = 0.1, batch_size: int = 16, size: int = 512):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        features, labels = batch
        loss = F.cross_entropy(self(features), labels)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    def train_dataloader(self):
        return DataLoader(
            make_dataset(self.hparams.size),
            batch_size=self.hparams.batch_size,
            shuffle=True,
            drop_last=True,
        )
