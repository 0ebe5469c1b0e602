import lightning as L
import torch
from torch import nn

from .scoring import OracleBaseline, export_instances, iou


class Segmenter(L.LightningModule):
    def __init__(self, full_res=False):
        super().__init__()
        self.net = nn.Linear(16, 4)
        self.full_res = full_res

    def training_step(self, batch, batch_idx):
        logits = self.net(batch[0])
        if self.full_res:
            assert False, "full resolution is not tested"
            logits = logits[logits.sum(-1) > 0]
        return logits.float().pow(2).mean()

    def validation_step(self, batch, batch_idx):
        pred = self.net(batch[0]) > 0
        self.log("val_iou", iou(pred, pred))

    def test_step(self, batch, batch_idx):
        scores = self.net(batch[0])
        pred = scores > 0
        self.log("test_iou", iou(pred, pred))
        export_instances(pred, scores.amax(-1))
        self.log("oracle", OracleBaseline()(pred))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
