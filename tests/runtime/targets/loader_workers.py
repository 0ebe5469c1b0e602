"""The loader of a real project: worker processes that persist across epochs, a prefetch
factor, a worker_init_fn, and an IterableDataset that splits its stream by the core's rank
and the worker's id. Each `__iter__` and worker_init_fn writes what it saw (core, world size,
device, worker) to the file named by TPULINT_TEST_SEEN."""

import os

import lightning as L
import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.runtime as xr
from torch import nn
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

SAMPLES = 2048  # 8 cores x 2 workers x 128: every core and worker gets an equal share


def _seen(where: str) -> None:
    path = os.environ.get("TPULINT_TEST_SEEN")
    if path:
        info = get_worker_info()
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(
                f"{where} {xr.global_ordinal()} {xr.world_size()} {torch_xla.device()}"
                f" {info.id if info else '-'} {os.getpid()}\n"
            )


def init_worker(worker_id: int) -> None:
    _seen("worker_init_fn")


class RankStream(IterableDataset):
    def __iter__(self):
        _seen("__iter__")
        info = get_worker_info()
        workers, worker = (info.num_workers, info.id) if info else (1, 0)
        shards = xr.world_size() * workers
        generator = torch.Generator().manual_seed(xr.global_ordinal() * workers + worker)
        for _ in range(xr.global_ordinal() * workers + worker, SAMPLES, shards):
            features = torch.randn(32, generator=generator)
            yield features, features[:4].argmax()


class WorkersModel(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        features, labels = batch
        loss = F.cross_entropy(self.net(features), labels)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(
            RankStream(),
            batch_size=32,
            num_workers=2,
            persistent_workers=True,
            prefetch_factor=2,
            worker_init_fn=init_worker,
        )
