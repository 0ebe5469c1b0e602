"""A small project launched with LightningCLI (main.py), for `verify --config`: a model and a
DataModule named by class_path in base.yaml, and a callback that writes down what the Trainer
it was given trained with (the test compares verify's run with the user's own CLI run)."""

import json
import os

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class WideModel(L.LightningModule):
    def __init__(self, hidden: int = 16, lr: float = 0.1):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(32, hidden), nn.ReLU(), nn.Linear(hidden, 4))

    def training_step(self, batch, batch_idx):
        features, labels = batch
        loss = F.cross_entropy(self.net(features), labels)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


class RandomData(L.LightningDataModule):
    def __init__(self, size: int = 512, batch_size: int = 16):
        super().__init__()
        self.size = size
        self.batch_size = batch_size

    def setup(self, stage: str):
        generator = torch.Generator().manual_seed(0)
        features = torch.randn(self.size, 32, generator=generator)
        self.train_set = TensorDataset(features, features[:, :4].argmax(dim=1))

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True)


class Snapshot(L.Callback):
    """Writes what the run was built with to `out` (JSON) when training starts, once."""

    def __init__(self, out: str):
        self.out = out

    def on_train_start(self, trainer, pl_module):
        if trainer.global_rank != 0:
            return
        optimizer = trainer.optimizers[0]
        snapshot = {
            "model": type(pl_module).__qualname__,
            "hparams": dict(pl_module.hparams),
            "datamodule": type(trainer.datamodule).__qualname__,
            "data": {"size": trainer.datamodule.size, "batch_size": trainer.datamodule.batch_size},
            "optimizer": type(optimizer).__name__,
            "optimizer_lr": optimizer.param_groups[0]["lr"],
            "accumulate_grad_batches": trainer.accumulate_grad_batches,
            "gradient_clip_val": trainer.gradient_clip_val,
            "log_every_n_steps": trainer.log_every_n_steps,
            "max_epochs": trainer.max_epochs,
            "num_devices": trainer.num_devices,
            "callbacks": [type(c).__name__ for c in trainer.callbacks],
            "seed": os.environ.get("PL_GLOBAL_SEED"),
        }
        with open(self.out, "w", encoding="utf-8") as handle:
            json.dump(snapshot, handle)
