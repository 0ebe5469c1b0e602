"""Run as `python src/train.py`: its folder is first on sys.path, so `data` is src/data.py."""

import lightning as L
import torch
import torch.nn.functional as F
from data import SegData


class SegNet(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.head = torch.nn.Conv2d(3, 2, 1)

    def training_step(self, batch, batch_idx):
        images, masks = batch
        loss = F.cross_entropy(self.head(images), masks)
        self.log("train_loss", loss.item())
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


def main(images):
    trainer = L.Trainer(accelerator="tpu", devices="auto", max_epochs=10)
    trainer.fit(SegNet(), datamodule=SegData(images))


if __name__ == "__main__":
    main([])
