import lightning as L
import torch
from torch import nn

from .ops import center, pool, spread, trim


class AtomModel(L.LightningModule):
    def __init__(self, width=64):
        super().__init__()
        self.net = nn.Linear(3, width)

    def training_step(self, batch, batch_idx):
        points = center(batch["pos"])
        h = self.net(trim(points))
        return pool(h, mask=batch["keep"]).sum() + spread(h).sum()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)
