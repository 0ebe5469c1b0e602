import lightning as L
import torch
from torchmetrics import MeanMetric


class Regressor(L.LightningModule):
    def __init__(self, width: int = 16):
        super().__init__()
        self.net = torch.nn.Linear(width, 1)
        self.train_loss = MeanMetric()
        self.score_loss = MeanMetric()

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self(x), y)
        self.train_loss(loss)
        return loss

    def test_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self(x), y)
        self.score_loss(loss)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)
