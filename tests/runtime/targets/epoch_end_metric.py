"""A validation metric whose compute() falls back (torchmetrics' calibration error bins with
`torch.bucketize`, which torch_xla 2.9 does not lower) at the end of each validation run, with
two validation batches per core: once per run, not every batch."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def _data(size: int, seed: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(size, 32, generator=generator)
    return TensorDataset(features, features[:, :4].argmax(dim=1))


class EpochEndBinning(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(32, 4)
        self.confidences: list[torch.Tensor] = []

    def training_step(self, batch, batch_idx):
        features, labels = batch
        return F.cross_entropy(self.net(features), labels)

    def validation_step(self, batch, batch_idx):
        features, _ = batch
        self.confidences.append(self.net(features).softmax(-1).amax(-1))

    def on_validation_epoch_end(self):
        confidences = torch.cat(self.confidences)
        self.confidences.clear()
        boundaries = torch.linspace(0, 1, 11, device=confidences.device)
        bins = torch.bucketize(confidences, boundaries)
        self.log("val_bins", bins.float().mean())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)

    def train_dataloader(self):
        return DataLoader(_data(512, 0), batch_size=16, drop_last=True)

    def val_dataloader(self):
        return DataLoader(_data(256, 1), batch_size=16, drop_last=True)
