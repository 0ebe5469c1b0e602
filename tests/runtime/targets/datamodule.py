"""A DataModule that provides the training data for no_dataloader.NoDataModel."""

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


class RandomDataModule(L.LightningDataModule):
    def __init__(self, size: int = 256, batch_size: int = 16):
        super().__init__()
        self.size = size
        self.batch_size = batch_size

    def setup(self, stage: str):
        generator = torch.Generator().manual_seed(0)
        features = torch.randn(self.size, 32, generator=generator)
        self.train_set = TensorDataset(features, features[:, :4].argmax(dim=1))

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True)
