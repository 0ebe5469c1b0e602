import lightning as L

from zoo.heads import HEADS
from zoo.optim import build_optimizer


class System(L.LightningModule):
    def __init__(self, backbone, act, head, optimizer):
        super().__init__()
        self.backbone = backbone
        self.act = act
        self.head = HEADS[head](8)
        self.optimizer_name = optimizer

    def training_step(self, batch, batch_idx):
        return self.head(self.act(self.backbone(batch))).mean()

    def configure_optimizers(self):
        return build_optimizer(self.optimizer_name, self.parameters())
