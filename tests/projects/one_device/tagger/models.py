import lightning as L
import torch
from torch import nn


class Tagger(L.LightningModule):
    """Trained only by fit_single.py, on one device wherever CUDA is absent."""

    def __init__(self, width: int = 128):
        super().__init__()
        self.head = nn.Linear(width, 4)

    def forward(self, x):
        return self.head(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self(x), y)
        self.log("train/loss", loss, prog_bar=True, sync_dist=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


class Ranker(L.LightningModule):
    """Trained by fit_single.py and by fit_many.py, whose device count the user picks."""

    def __init__(self, width: int = 128):
        super().__init__()
        self.score = nn.Linear(width, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.score(x).squeeze(-1), y)
        self.log("train/mse", loss, sync_dist=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
