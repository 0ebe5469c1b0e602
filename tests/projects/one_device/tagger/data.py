import torch
from torch.utils.data import DataLoader, TensorDataset


def loader(width: int = 128, batch_size: int = 32) -> DataLoader:
    x = torch.randn(512, width)
    y = torch.randint(0, 4, (512,))
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, drop_last=True)


def score_loader(width: int = 128, batch_size: int = 32) -> DataLoader:
    x = torch.randn(512, width)
    return DataLoader(TensorDataset(x, x.mean(-1)), batch_size=batch_size, drop_last=True)
