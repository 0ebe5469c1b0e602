"""A TPU-ready Lightning 2.x module: nothing to report."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(L.LightningModule):
    def __init__(self, batch_size: int = 64):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10))
        self.register_buffer("class_weights", torch.ones(10))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        valid = y >= 0
        losses = F.cross_entropy(self(x), y.clamp(min=0), reduction="none")
        loss = torch.where(valid, losses, 0).sum() / valid.sum().clamp(min=1)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def on_train_epoch_end(self):
        if self.trainer.is_global_zero:
            print("last loss", self.trainer.callback_metrics["train_loss"].item())

    def train_dataloader(self):
        data = TensorDataset(torch.randn(1024, 128), torch.randint(0, 10, (1024,)))
        return DataLoader(data, batch_size=self.hparams.batch_size, shuffle=True,
                          drop_last=True, num_workers=4)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


if __name__ == "__main__":
    L.Trainer(accelerator="tpu", devices="auto", precision="bf16-true").fit(Classifier())
