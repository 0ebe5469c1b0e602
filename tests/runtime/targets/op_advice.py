"""Ops with op-specific advice.

* GammaLikelihood: a negative-binomial likelihood (lgamma, and digamma in its backward):
  special functions torch_xla 2.9 has no lowering for, on TPU too.
* ValidatedAccuracy: torchmetrics' functional binary accuracy with its default argument
  validation, which calls `unique` on the targets every batch (and reads the result).
* ScatterMax: `scatter_reduce(..., include_self=False)`: torch_xla lowers scatter_reduce only
  with include_self=True.
* LegacyHooks: a Lightning 1.x hook (`training_epoch_end`) that Lightning 2 refuses.
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torchmetrics.functional import accuracy


def make_dataset(size: int = 512) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(size, 32, generator=generator)
    return TensorDataset(features, features[:, :4].argmax(dim=1))


class _Base(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(32, 4)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)

    def train_dataloader(self):
        return DataLoader(make_dataset(), batch_size=16, drop_last=True)


class GammaLikelihood(_Base):
    def training_step(self, batch, batch_idx):
        features, labels = batch
        total = F.softplus(self.net(features)[:, 0]) + 1.0
        counts = labels.float()
        log_prob = torch.lgamma(counts + total) - torch.lgamma(total) - torch.lgamma(counts + 1)
        return -(log_prob + total * torch.log(torch.tensor(0.5))).mean()


class ValidatedAccuracy(_Base):
    def training_step(self, batch, batch_idx):
        features, labels = batch
        logits = self.net(features)
        self.log("train_acc", accuracy(logits[:, 0].sigmoid(), (labels == 0).long(), task="binary"))
        return F.cross_entropy(logits, labels)


class ScatterMax(_Base):
    def training_step(self, batch, batch_idx):
        features, labels = batch
        logits = self.net(features)
        per_class = torch.zeros(4, 4, device=self.device).scatter_reduce(
            0, labels[:, None].expand(-1, 4), logits, reduce="amax", include_self=False
        )
        return F.cross_entropy(logits, labels) + 0.01 * per_class.sum()


class LegacyHooks(_Base):
    def training_step(self, batch, batch_idx):
        features, labels = batch
        return F.cross_entropy(self.net(features), labels)

    def training_epoch_end(self, outputs):
        pass


class FallbacksOnTwoLines(_Base):
    # lgamma at one line, scatter_reduce without include_self at another (as neuralforecast's
    # NHITS has unfold and 1-D interpolation at two lines): the summary puts each op at its own.
    def training_step(self, batch, batch_idx):
        features, labels = batch
        logits = self.net(features)
        smooth = torch.lgamma(F.softplus(logits) + 1.0).mean()
        per_class = torch.zeros(4, 4, device=self.device).scatter_reduce(
            0, labels[:, None].expand(-1, 4), logits, reduce="amax", include_self=False
        )
        return F.cross_entropy(logits, labels) + 0.01 * (smooth + per_class.sum())
