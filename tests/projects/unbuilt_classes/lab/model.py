import lightning as L
import torch

from lab.encoders import ENCODERS
from lab.losses import SoftLoss
from lab.norms import Critic


class Tagger(L.LightningModule):
    def __init__(self, cfg):
        super().__init__()
        self.encoder = ENCODERS[cfg["encoder"]](16)
        self.critic = Critic(16, use_scale_norm=False)
        self.loss = SoftLoss()

    def training_step(self, batch, batch_idx):
        x, y = batch
        h = self.encoder(x)
        return self.loss(h, y) + self.critic(h).mean()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
