"""tpulint's example project: a small image classifier on synthetic data.

tpu_unready/ is written for GPUs, the way many Lightning projects start; tpu_ready/ is what
`tpulint fix --unsafe-fixes` made of it.
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset


class RandomImages(Dataset):
    """Synthetic 1x16x16 "images" with 10 classes; label -1 marks unlabeled samples."""

    def __init__(self, size: int = 1000, seed: int = 0):
        generator = torch.Generator().manual_seed(seed)
        self.images = torch.randn(size, 1, 16, 16, generator=generator)
        self.labels = torch.randint(0, 10, (size,), generator=generator)
        self.labels[torch.rand(size, generator=generator) < 0.2] = -1

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        return self.images[index], self.labels[index]


class LitClassifier(L.LightningModule):
    def __init__(self, lr: float = 0.05, batch_size: int = 16):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        images, labels = batch
        logits = self(images)
        labeled = labels >= 0
        loss = F.cross_entropy(logits, labels.clamp(min=0), reduction="none")
        loss = torch.where(labeled, loss, 0).sum() / labeled.sum()
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        images, labels = batch
        preds = self(images).argmax(dim=1)
        accuracy = (preds == labels).float().mean()
        self.log("val_acc", accuracy)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    def train_dataloader(self):
        return DataLoader(RandomImages(1000), batch_size=self.hparams.batch_size, shuffle=True, drop_last=True)

    def val_dataloader(self):
        return DataLoader(RandomImages(200, seed=1), batch_size=self.hparams.batch_size)
