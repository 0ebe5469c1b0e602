"""Written for GPUs: a loss logged as a Python float, batch 10, no drop_last.

`tpulint fix --unsafe-fixes` turns it TPU-ready (TPU102, TPU302, TPU303); verify --compare
shows the difference.
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class LogItemModel(L.LightningModule):
    def __init__(self, batch_size: int = 10):
        super().__init__()
        self.batch_size = batch_size
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        features, labels = batch
        loss = F.cross_entropy(self.net(features), labels)
        self.log("train_loss", loss.item())
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        generator = torch.Generator().manual_seed(0)
        features = torch.randn(256, 32, generator=generator)
        labels = features[:, :4].argmax(dim=1)
        return DataLoader(TensorDataset(features, labels), batch_size=self.batch_size, shuffle=True)
