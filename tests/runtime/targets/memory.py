"""Modules whose memory is known from their shapes (tests/runtime/test_memory.py works it out
by hand): a stack of large Linear layers trained with Adam, where parameters, gradients and
optimizer state dominate, and a small convolution network on wide images, where the
activations kept for backward dominate."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

WIDTH, LAYERS, BATCH = 1024, 4, 8
CHANNELS, HEIGHT, IMAGE_WIDTH, CLASSES = 16, 32, 128, 10
SAMPLES = 64  # 4 batches per core per epoch on 2 cores


class LinearStack(L.LightningModule):
    """4 x Linear(1024, 1024), ReLU between them, regression on (features, targets)."""

    def __init__(self):
        super().__init__()
        layers = []
        for index in range(LAYERS):
            layers.append(nn.Linear(WIDTH, WIDTH))
            if index < LAYERS - 1:
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)

    def training_step(self, batch, batch_idx):
        features, targets = batch
        return F.mse_loss(self.net(features), targets)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-4)

    def train_dataloader(self):
        generator = torch.Generator().manual_seed(0)
        features = torch.randn(SAMPLES, WIDTH, generator=generator)
        targets = torch.randn(SAMPLES, WIDTH, generator=generator)
        return DataLoader(TensorDataset(features, targets), batch_size=BATCH, drop_last=True)


class ConvNet(L.LightningModule):
    """3 x (3x3 convolution, 16 channels, ReLU) on 3 x 32 x 128 images, pooled, classified."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, CHANNELS, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.head = nn.Linear(CHANNELS, CLASSES)

    def training_step(self, batch, batch_idx):
        images, labels = batch
        return F.cross_entropy(self.head(self.features(images)), labels)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)

    def train_dataloader(self):
        generator = torch.Generator().manual_seed(0)
        images = torch.randn(SAMPLES, 3, HEIGHT, IMAGE_WIDTH, generator=generator)
        labels = torch.randint(0, CLASSES, (SAMPLES,), generator=generator)
        return DataLoader(TensorDataset(images, labels), batch_size=BATCH, drop_last=True)
