import lightning as L
import torch

from splats.render import Rasteriser, SurfelGrid


class SplatModule(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.rasteriser = Rasteriser()

    def training_step(self, batch, batch_idx):
        rays, target = batch
        colour, last = self.rasteriser(rays)
        loss = (colour.sum(-1) - target).pow(2).mean() + last.mean()
        self.log("loss", loss.item())
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class SurfelModule(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.grid = SurfelGrid()

    def training_step(self, batch, batch_idx):
        index, target = batch
        loss = (self.grid.lookup(index) - target).pow(2).mean()
        self.log("loss", loss.item())
        self.grid.fused_step(index, 1e-2)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.0)
