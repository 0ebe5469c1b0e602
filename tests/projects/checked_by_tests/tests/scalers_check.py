import lightning as L
import torch

from lab.scalers import MeanScaler, SharedScaler, clip_scale


def check_scalers():
    x = torch.randn(4, 8)
    assert MeanScaler()(x).shape == x.shape
    assert SharedScaler()(x).ndim == 2
    assert clip_scale(x).max() <= 10


class TinyModule(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)

    def training_step(self, batch, batch_idx):
        loss = self.layer(batch).mean()
        assert loss.item() == loss.item()
        return loss
