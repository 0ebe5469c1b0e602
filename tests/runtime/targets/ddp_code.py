"""Code written for DDP that asks torch.distributed, which Lightning's XLA strategy never
initialises (it communicates through torch_xla): on every core it behaves as one process.

* GatheredNegatives: a contrastive loss that gathers the other ranks' embeddings as negatives
  when torch.distributed is initialised; under XLA each core uses only its own batch.
* RankShardedStream: an IterableDataset that shards itself by torch.distributed's rank; under
  XLA every core reads rank 0's share, the same batches on every core.
"""

import lightning as L
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, IterableDataset, TensorDataset


def make_dataset(size: int = 512) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(size, 32, generator=generator)
    return TensorDataset(features, features[:, :4].argmax(dim=1))


class GatheredNegatives(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(32, 16)

    def training_step(self, batch, batch_idx):
        features, _ = batch
        query = F.normalize(self.encoder(features), dim=1)
        key = F.normalize(self.encoder(features + 0.01), dim=1)
        if dist.is_available() and dist.is_initialized():
            gathered = [torch.zeros_like(key) for _ in range(dist.get_world_size())]
            dist.all_gather(gathered, key)
            gathered[dist.get_rank()] = key
            keys = torch.cat(gathered)
        else:
            keys = key
        logits = query @ keys.T / 0.1
        return F.cross_entropy(logits, torch.arange(query.shape[0], device=self.device))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(make_dataset(), batch_size=16, drop_last=True)


class RankStream(IterableDataset):
    def __init__(self, size: int = 1024):
        self.size = size

    def __iter__(self):
        rank, world = 0, 1
        if dist.is_available() and dist.is_initialized():
            rank, world = dist.get_rank(), dist.get_world_size()
        generator = torch.Generator().manual_seed(0)
        features = torch.randn(self.size, 32, generator=generator)
        for index in range(rank, self.size, world):
            yield features[index], features[index, :4].argmax()


class RankShardedStream(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(32, 4)

    def training_step(self, batch, batch_idx):
        features, labels = batch
        return F.cross_entropy(self.net(features), labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(RankStream(), batch_size=16, drop_last=True)
