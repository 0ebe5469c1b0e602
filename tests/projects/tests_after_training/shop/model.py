import lightning as L
import torch

from shop.scorer import Scorer


class ShopModel(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(8, 2)
        self.scorer = Scorer()

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def test_step(self, batch, batch_idx):
        x, _ = batch
        kept = self.scorer([self.net(x).softmax(-1)])
        self.log("kept", float(len(kept)))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
