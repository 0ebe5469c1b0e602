"""A module that relies on what its Trainer provides and verify replaces: it writes to the
logger itself (`log_metrics`, `log_hyperparams`, the experiment object a TensorBoard or W&B
user calls), reads `trainer.log_dir`, the checkpoint callback's state, the progress bar and
the early-stopping callback. Under verify each of them must still be there."""

import os

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import EarlyStopping, LearningRateMonitor, ModelCheckpoint
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_dataset(size: int = 512, seed: int = 0) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(size, 32, generator=generator)
    return TensorDataset(features, features[:, :4].argmax(dim=1))


class UsesTrainerObjects(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Linear(32, 4)

    def on_fit_start(self):
        self.logger.log_hyperparams({"width": 32})
        os.makedirs(os.path.join(self.trainer.log_dir, "samples"), exist_ok=True)

    def training_step(self, batch, batch_idx):
        features, labels = batch
        loss = F.cross_entropy(self.net(features), labels)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        features, labels = batch
        self.log("val_loss", F.cross_entropy(self.net(features), labels))

    def on_validation_epoch_end(self):
        self.trainer.logger.log_metrics({"epoch_seen": self.current_epoch}, step=self.global_step)
        self.logger.experiment.add_scalar("custom", 1.0, self.global_step)
        best = self.trainer.checkpoint_callback.best_model_path
        patience = self.trainer.early_stopping_callback.patience
        batches = self.trainer.progress_bar_callback.total_train_batches
        self.print(f"best so far: {best or 'none'}; patience {patience}; {batches} batches")

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
        return {
            "optimizer": optimizer,
            "lr_scheduler": torch.optim.lr_scheduler.StepLR(optimizer, step_size=1),
        }

    def configure_callbacks(self):
        return [
            ModelCheckpoint(monitor="val_loss", save_top_k=1),
            EarlyStopping(monitor="val_loss", patience=3),
            LearningRateMonitor(),
        ]

    def train_dataloader(self):
        return DataLoader(make_dataset(), batch_size=16, shuffle=True, drop_last=True)

    def val_dataloader(self):
        return DataLoader(make_dataset(128, seed=1), batch_size=16, drop_last=True)
