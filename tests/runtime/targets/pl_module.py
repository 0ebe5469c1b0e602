"""A module written against the standalone `pytorch_lightning` package (not `lightning`): verify
must train it with pytorch_lightning's own Trainer, which accepts only its own classes."""

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class PLModel(pl.LightningModule):
    def __init__(self, lr: float = 0.1):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        features, labels = batch
        loss = F.cross_entropy(self.net(features), labels)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


class PLData(pl.LightningDataModule):
    def __init__(self, size: int = 512, batch_size: int = 16):
        super().__init__()
        self.size = size
        self.batch_size = batch_size

    def setup(self, stage: str):
        generator = torch.Generator().manual_seed(0)
        features = torch.randn(self.size, 32, generator=generator)
        self.train_set = TensorDataset(features, features[:, :4].argmax(dim=1))

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True)
