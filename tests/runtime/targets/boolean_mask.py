"""Boolean-mask indexing in the loss: the selected count depends on the data (TPU202)."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_dataset(size: int = 512) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(size, 32, generator=generator)
    labels = features[:, :4].argmax(dim=1)
    labels[torch.rand(size, generator=generator) < 0.3] = -1  # unlabeled
    return TensorDataset(features, labels)


class MaskedLossModel(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        features, labels = batch
        logits = self.net(features)
        labeled = labels >= 0
        loss = F.cross_entropy(logits[labeled], labels[labeled])
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(make_dataset(), batch_size=16, shuffle=True, drop_last=True)
