import lightning as L
import torch

from tracks.decode import PeakDecoder
from tracks.encoders import DenseEncoder, SparseEncoder
from tracks.heads import Head


class Tracker(L.LightningModule):
    def __init__(self, head: Head, width: int = 16, sparse: bool = False):
        super().__init__()
        # The encoder's class is picked by the run's config.
        if sparse:
            encoder_cls = SparseEncoder
        else:
            encoder_cls = DenseEncoder
        self.encoder = encoder_cls(width)
        self.head = head
        self.decode = PeakDecoder()

    def training_step(self, batch, batch_idx):
        features = self.encoder.encode(batch["x"])
        loss = self.head.loss(features, batch["y"])
        self.log("train/loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        scores = self.encoder.encode(batch["x"]).mean(-1)
        peaks = self.decode(scores, batch["valid"])
        self.log("val/peaks", float(sum(len(p) for p in peaks)))

    def predict_step(self, batch, batch_idx):
        return self.decode(self.encoder.encode(batch["x"]).mean(-1), batch["valid"])

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
