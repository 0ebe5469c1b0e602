import lightning as L
import torch
from torch import nn

from .blocks import MeanHead
from .ops import center, pool, spread, trim


class ResidueModel(L.LightningModule):
    def __init__(self, block, width=64):
        super().__init__()
        self.net = nn.Linear(3, width)
        # `block`: a partial of the class configs/block.yaml names
        self.block = block(width)
        self.head = MeanHead()

    def training_step(self, batch, batch_idx):
        points = center(batch["pos"], mask=batch["present"])
        h = self.block(self.net(trim(points)))
        return pool(h, batch["present"]).sum() + spread(h, batch["present"]).sum() + self.head(h)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)
