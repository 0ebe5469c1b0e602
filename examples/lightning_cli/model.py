"""tpulint's LightningCLI example: the classifier of tpu_ready/, with its data in a DataModule,
launched the way many projects are: `python main.py fit --config config.yaml`."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(L.LightningModule):
    def __init__(self, hidden: int = 64, lr: float = 0.05):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.Flatten(), nn.Linear(256, hidden), nn.ReLU(), nn.Linear(hidden, 10)
        )

    def training_step(self, batch, batch_idx):
        images, labels = batch
        loss = F.cross_entropy(self.net(images), labels)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


class RandomImages(L.LightningDataModule):
    """Synthetic 1x16x16 "images" with 10 classes."""

    def __init__(self, size: int = 1024, batch_size: int = 16):
        super().__init__()
        self.size = size
        self.batch_size = batch_size

    def setup(self, stage: str):
        generator = torch.Generator().manual_seed(0)
        images = torch.randn(self.size, 1, 16, 16, generator=generator)
        labels = torch.randint(0, 10, (self.size,), generator=generator)
        self.train_set = TensorDataset(images, labels)

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True)
