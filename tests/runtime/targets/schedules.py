"""Training shapes whose graphs change once after warm-up and are then reused: verify reports
the one-time compiles with their step and cause and passes.

* ManualLogging: manual optimization (GAN-style) that logs every step.
* Accumulation: gradient accumulation over 4 batches (the first optimizer step comes after
  warm-up); set through configure_callbacks, as a Trainer argument would.
* BurnIn: a burn-in phase: from epoch 1 on, the loss gains a regularization term, so the
  training step's graph changes once (a warning: each switch is a compile on a TPU).
"""

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import GradientAccumulationScheduler
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_dataset(size: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(size, 32, generator=generator)
    return TensorDataset(features, features[:, :4].argmax(dim=1))


class _Base(L.LightningModule):
    samples = 512

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(make_dataset(self.samples), batch_size=16, shuffle=True, drop_last=True)


class ManualLogging(_Base):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        optimizer = self.optimizers()
        features, labels = batch
        loss = F.cross_entropy(self.net(features), labels)
        optimizer.zero_grad()
        self.manual_backward(loss)
        optimizer.step()
        self.log("train_loss", loss)


class Accumulation(_Base):
    samples = 1024  # 8 batches per core and epoch: two optimizer steps per epoch

    def training_step(self, batch, batch_idx):
        features, labels = batch
        loss = F.cross_entropy(self.net(features), labels)
        self.log("train_loss", loss)
        return loss

    def configure_callbacks(self):
        return [GradientAccumulationScheduler({0: 4})]


class BurnIn(_Base):
    def training_step(self, batch, batch_idx):
        features, labels = batch
        loss = F.cross_entropy(self.net(features), labels)
        if self.current_epoch >= 1:  # after the burn-in epoch: weight decay on the output
            loss = loss + 1e-3 * self.net[2].weight.pow(2).sum()
        self.log("train_loss", loss)
        return loss
