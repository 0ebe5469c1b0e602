import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


class SceneData(L.LightningDataModule):
    def train_dataloader(self):
        return DataLoader(TensorDataset(torch.randn(64, 16)), batch_size=8, drop_last=True)

    def test_dataloader(self):
        return DataLoader(TensorDataset(torch.randn(64, 16)), batch_size=8, drop_last=True)
