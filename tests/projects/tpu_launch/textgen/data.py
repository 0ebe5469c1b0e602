import lightning as L
import torch
import torch_xla.core.xla_model as xm
from torch.utils.data import DataLoader, DistributedSampler, IterableDataset, TensorDataset


class TokenStream(IterableDataset):
    """Reads token blocks from a shard list, in order."""

    def __init__(self, files):
        self.files = files

    def __iter__(self):
        for name in self.files:
            yield from torch.load(name)


class TextData(L.LightningDataModule):
    def train_dataloader(self):
        data = TensorDataset(torch.randint(0, 1000, (4096, 128)))
        sampler = DistributedSampler(
            data, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal()
        )
        return DataLoader(data, batch_size=32, sampler=sampler)

    def val_dataloader(self):
        return DataLoader(TokenStream(["val-00.pt", "val-01.pt"]), batch_size=32)
