import lightning as L
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class LoaderModule(L.LightningDataModule):
    """The loaders before `loaders.py`: nothing imports this module any more."""

    def train_dataloader(self):
        data = TensorDataset(torch.randn(64, 8))
        return DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
