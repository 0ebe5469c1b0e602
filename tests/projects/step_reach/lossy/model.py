import lightning as L
from torch import nn
from torch.utils.checkpoint import checkpoint

from .losses import focal_loss
from .optim import ClippedSignSGD


class LossHistory(L.Callback):
    def __init__(self):
        self.history = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.history.append(outputs["loss"].tolist())


class Tagger(L.LightningModule):
    def __init__(self, width=128, tags=16):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(width, width), nn.GELU())
        self.head = nn.Linear(width, tags)
        self.criterion = focal_loss

    def _trunk(self, x):
        return self.body(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        hidden = checkpoint(self._trunk, x, use_reentrant=False)
        return self.criterion(self.head(hidden), y)

    def configure_optimizers(self):
        return ClippedSignSGD(self.parameters(), lr=1e-3)
