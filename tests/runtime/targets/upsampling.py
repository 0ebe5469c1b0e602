"""A small convolutional autoencoder whose decoder upsamples with nearest-neighbour
interpolation, as most CNN decoders and U-Nets do. torch_xla 2.9 lowers
upsample_nearest2d's backward on TPU and falls back to the CPU only on other devices."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_dataset(size: int = 512) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    return TensorDataset(torch.randn(size, 1, 16, 16, generator=generator))


class NearestDecoder(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(1, 8, 3, stride=2, padding=1), nn.ReLU())
        self.decoder = nn.Sequential(
            nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(8, 1, 3, padding=1)
        )

    def training_step(self, batch, batch_idx):
        (images,) = batch
        return F.mse_loss(self.decoder(self.encoder(images)), images)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def train_dataloader(self):
        return DataLoader(make_dataset(), batch_size=16, drop_last=True)
