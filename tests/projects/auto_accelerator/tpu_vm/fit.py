import lightning as L
import torch
from torch import nn


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main(loader):
    # accelerator "auto": on the TPU VM of requirements-tpu.txt, XLA (and 16-mixed fails).
    trainer = L.Trainer(max_epochs=2, precision="16-mixed")
    trainer.fit(Regressor(), loader)
    # A GPU Trainer of the same project: mixed precision is right there.
    L.Trainer(accelerator="gpu", precision="16-mixed")
    # A supported value.
    L.Trainer(accelerator="auto", precision="bf16-true")


if __name__ == "__main__":
    main(None)
