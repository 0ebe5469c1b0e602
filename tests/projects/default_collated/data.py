"""Loaders whose batches hold tensors where a collate of the project would leave numpy:
torch's default collate turns an item's numpy arrays and numbers into tensors, and a
second collate building a tensor at the same place makes it one too."""

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Clips(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        # default-collated: `np.array(i % 7)` becomes a tensor of the batch's lengths
        return np.ones(4, dtype=np.float32), np.array(i % 7), f"clip{i}"


def stack_clips(items):
    frames = torch.from_numpy(np.stack([x for x, _, _ in items]))
    lengths = np.array([int(n) for _, n, _ in items])
    return frames, lengths, [name for _, _, name in items]


def stack_windows(items):
    frames = torch.from_numpy(np.stack([x for x, _, _ in items]))
    return {"frames": frames, "spans": np.array([int(n) for _, n, _ in items])}


def tensor_windows(items):
    frames = torch.from_numpy(np.stack([x for x, _, _ in items]))
    return {"frames": frames, "spans": torch.tensor([int(n) for _, n, _ in items])}


class ClipData(L.LightningDataModule):
    def train_dataloader(self):
        # no collate_fn: torch's default collate
        return DataLoader(Clips(), batch_size=4, num_workers=4)

    def val_dataloader(self):
        return DataLoader(Clips(), batch_size=4, num_workers=4, collate_fn=stack_clips)

    def test_dataloader(self):
        # two collates build `spans`: one a numpy array, one a tensor
        windows = DataLoader(Clips(), batch_size=4, num_workers=4, collate_fn=stack_windows)
        return [
            windows,
            DataLoader(Clips(), batch_size=4, num_workers=4, collate_fn=tensor_windows),
        ]
