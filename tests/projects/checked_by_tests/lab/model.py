import lightning as L
import torch

from lab.testing import batch_norm_of


class Net(L.LightningModule):
    def __init__(self, scaler):
        super().__init__()
        self.scaler = scaler
        self.layer = torch.nn.Linear(8, 1)

    def training_step(self, batch, batch_idx):
        x = self.scaler(batch)
        loss = self.layer(x).mean()
        self.log("norm", batch_norm_of(x))
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
