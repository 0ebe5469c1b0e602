import lightning as L
import torch
from torch import nn

from tracks.decode import PeakDecoder
from tracks.heads import Head


class Tracker(L.LightningModule):
    def __init__(self, head: Head, width: int = 16):
        super().__init__()
        self.encoder = nn.Linear(width, width)
        self.head = head
        self.decode = PeakDecoder()

    def training_step(self, batch, batch_idx):
        features = self.encoder(batch["x"])
        loss = self.head.loss(features, batch["y"])
        self.log("train/loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        scores = self.encoder(batch["x"]).mean(-1)
        peaks = self.decode(scores, batch["valid"])
        self.log("val/peaks", float(sum(len(p) for p in peaks)))

    def predict_step(self, batch, batch_idx):
        return self.decode(self.encoder(batch["x"]).mean(-1), batch["valid"])

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
