"""A module that writes down, when training ends, what its Trainer did: optimizer steps taken,
batches seen, the clipping value and the DataModule's batch size (to `record`, a JSON path), so
a test can see that --trainer-args and --datamodule-args reached the run."""

import json

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn


class CountingModel(L.LightningModule):
    def __init__(self, record: str = "", lr: float = 0.1):
        super().__init__()
        self.record = record
        self.lr = lr
        self.batches = 0
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        features, labels = batch
        self.batches += 1
        return F.cross_entropy(self.net(features), labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)

    def on_train_end(self):
        if self.record and self.trainer.global_rank == 0:
            with open(self.record, "w", encoding="utf-8") as handle:
                json.dump(
                    {
                        "optimizer_steps": self.global_step,
                        "batches": self.batches,
                        "gradient_clip_val": self.trainer.gradient_clip_val,
                        "batch_size": self.trainer.datamodule.batch_size,
                        "num_devices": self.trainer.num_devices,
                    },
                    handle,
                )
