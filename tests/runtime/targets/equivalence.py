"""Modules for `verify --compare`'s equivalence check and `fix --prove`.

`NoisyMaskedModel` trains with dropout and random augmentation (host RNGs in the dataset, the
XLA RNG in dropout), a masked cross-entropy (TPU202), a masked L1 term and per-step losses
read with `.item()` (TPU101) into a list averaged at the end of each epoch: every rewrite
tpulint makes of it is exact (the losses stay on the device until the epoch ends), so the
fixed module must train the same from the same seed and end every epoch with the same
`epoch_losses`. `WrongRewriteModel` has the same shape, and tests/runtime/test_equivalence.py
rewrites its masked mean into a plain mean (a rewrite that is not exact) to check that the
comparison catches it and names the rewrite.
"""

import random

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset


class NoisyPoints(Dataset):
    """Points with 4 classes, a third unlabeled (-1); `__getitem__` flips and jitters them at
    random (Python's `random` and torch's host RNG, as augmentations do)."""

    def __init__(self, size: int = 512, seed: int = 0):
        generator = torch.Generator().manual_seed(seed)
        self.features = torch.randn(size, 32, generator=generator)
        self.labels = self.features[:, :4].argmax(dim=1)
        self.labels[torch.rand(size, generator=generator) < 0.3] = -1
        self.targets = self.features[:, 4:8].sum(dim=1)

    def __len__(self):
        return len(self.features)

    def __getitem__(self, index):
        x = self.features[index]
        if random.random() < 0.5:
            x = x.flip(0)
        x = x + 0.05 * torch.randn_like(x)
        return x, self.labels[index], self.targets[index]


class NoisyMaskedModel(L.LightningModule):
    def __init__(self, lr: float = 0.1):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 5))
        self.losses = []
        self.epoch_losses = []
        self.lr = lr

    def training_step(self, batch, batch_idx):
        features, labels, targets = batch
        out = self.net(features)
        logits, value = out[:, :4], out[:, 4]
        labeled = labels >= 0
        loss = F.cross_entropy(logits[labeled], labels[labeled])
        loss = loss + 0.1 * (value[labeled] - targets[labeled]).abs().mean()
        self.losses.append(loss.item())
        return loss

    def on_train_epoch_end(self):
        self.epoch_losses.append(sum(self.losses) / len(self.losses))
        self.losses.clear()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)

    def train_dataloader(self):
        return DataLoader(NoisyPoints(), batch_size=8, shuffle=True, drop_last=True)


class WrongRewriteModel(NoisyMaskedModel):
    """The same training; its masked mean is the rewrite the test corrupts."""

    def __init__(self, lr: float = 0.1):
        super().__init__(lr)
        self.wrong_losses = []

    def training_step(self, batch, batch_idx):
        features, labels, _ = batch
        logits = self.net(features)[:, :4]
        labeled = labels >= 0
        loss = F.cross_entropy(logits, labels.clamp(min=0), reduction="none")
        loss = loss[labeled].mean()
        self.wrong_losses.append(loss.item())
        return loss

    def on_train_epoch_end(self):
        self.epoch_losses.append(max(self.wrong_losses))
        self.wrong_losses = []
