"""Custom collate functions that leave some batch entries as numpy arrays and Python lists:
Lightning's batch transfer moves tensors only, so the steps read those on the host."""

from functools import partial

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Tracks(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"points": np.ones((i % 5 + 1, 3), dtype=np.float32), "tag": f"t{i}"}


def featurize(items):
    # a collate function by its use only (`collate_fn=featurize`)
    lengths = np.array([len(b["points"]) for b in items], dtype=np.int32)
    flat = torch.from_numpy(np.concatenate([b["points"] for b in items]))
    tags = [b["tag"] for b in items]
    return flat, lengths, tags


def pad_batch(items, value=0.0):
    longest = max(len(b["points"]) for b in items)
    padded = np.full((len(items), longest, 3), value, dtype=np.float32)
    for i, b in enumerate(items):
        padded[i, : len(b["points"])] = b["points"]
    batch = {"points": torch.from_numpy(padded)}
    batch["sizes"] = np.array([len(b["points"]) for b in items])
    batch["counts"] = torch.as_tensor([len(b["points"]) for b in items])
    return batch


class TrackData(L.LightningDataModule):
    def train_dataloader(self):
        return DataLoader(Tracks(64), batch_size=8, num_workers=4, collate_fn=featurize)

    def val_dataloader(self):
        return DataLoader(
            Tracks(16), batch_size=8, num_workers=4, collate_fn=partial(pad_batch, value=-1.0)
        )
