"""A MoCo-style queue of negatives written at a pointer read from the device: `int(ptr)`
turns the device value into a Python number, and the slice and the pointer update bake it
into the step's graph as a constant, so every step compiles a new graph (one per offset)."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_dataset(size: int = 512) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(size, 32, generator=generator)
    return TensorDataset(features, features[:, :4].argmax(dim=1))


class MovingQueue(L.LightningModule):
    def __init__(self, queue_size: int = 4096, dim: int = 16):
        super().__init__()
        self.encoder = nn.Linear(32, dim)
        self.register_buffer("queue", F.normalize(torch.randn(queue_size, dim), dim=1))
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        batch_size = keys.shape[0]
        ptr = int(self.queue_ptr)
        self.queue[ptr : ptr + batch_size] = keys
        self.queue_ptr[0] = (ptr + batch_size) % self.queue.shape[0]

    def training_step(self, batch, batch_idx):
        features, _ = batch
        query = F.normalize(self.encoder(features), dim=1)
        with torch.no_grad():
            key = F.normalize(self.encoder(features + 0.01), dim=1)
        positive = (query * key).sum(dim=1, keepdim=True)
        negative = query @ self.queue.clone().detach().T
        logits = torch.cat([positive, negative], dim=1) / 0.07
        loss = F.cross_entropy(logits, torch.zeros_like(logits[:, 0], dtype=torch.long))
        self._dequeue_and_enqueue(key)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(make_dataset(), batch_size=8, drop_last=True)
