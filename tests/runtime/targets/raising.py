"""Code that raises on a TPU exactly as it raises here: verify fails it (exit 1) with the line.

* SkipsStep: `training_step` returns None for some batches; Lightning refuses that under a
  distributed strategy.
* SparseStep: an op torch_xla cannot run (sparse tensors have no XLA backend).
* CustomLoader: a DataLoader subclass that takes an argument it does not keep; Lightning
  cannot rebuild it with its DistributedSampler.
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_dataset(size: int = 256) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(size, 32, generator=generator)
    return TensorDataset(features, features[:, :4].argmax(dim=1))


class _Base(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(32, 4)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(make_dataset(), batch_size=16, drop_last=True)


class SkipsStep(_Base):
    def training_step(self, batch, batch_idx):
        features, labels = batch
        if batch_idx == 1:
            return None  # "skip this batch"
        return F.cross_entropy(self.net(features), labels)


class SparseStep(_Base):
    def training_step(self, batch, batch_idx):
        features, labels = batch
        sparse = features.to_sparse()
        return F.cross_entropy(self.net(sparse.to_dense()), labels)


class TaggedLoader(DataLoader):
    def __init__(self, dataset, tag, **kwargs):
        super().__init__(dataset, **kwargs)  # `tag` is not kept


class CustomLoader(_Base):
    def __init__(self):
        super().__init__()
        # Built outside the dataloader hook, so Lightning never saw its arguments.
        self.loader = TaggedLoader(make_dataset(), "train", batch_size=16, drop_last=True)

    def training_step(self, batch, batch_idx):
        features, labels = batch
        return F.cross_entropy(self.net(features), labels)

    def train_dataloader(self):
        return self.loader
