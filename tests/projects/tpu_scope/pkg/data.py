import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


def captions(n):
    return TensorDataset(torch.randint(0, 512, (n, 32)), torch.randint(0, 512, (n, 32)))


class TpuCaptions(L.LightningDataModule):
    def train_dataloader(self):
        return DataLoader(captions(1000), batch_size=64, shuffle=True, drop_last=True, num_workers=4)

    def val_dataloader(self):
        return DataLoader(captions(256), batch_size=64, num_workers=4)


class GpuCaptions(L.LightningDataModule):
    def train_dataloader(self):
        return DataLoader(captions(1000), batch_size=48, shuffle=True, num_workers=4)
