"""Two modules that read host values from their batches."""

import lightning as L
import torch
from torch import nn


class Scores:
    """The step's own output record: built every step, its tensors on the device."""

    def __init__(self, logits):
        self.logits = logits


class Tagger(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(16, 3)

    def training_step(self, batch, batch_idx):
        logits = self.net(batch["audio"])
        loss = nn.functional.cross_entropy(logits, batch["label"])
        # `n_clips` is `len(samples)` in the collate: a Python int, no sync
        if batch["n_clips"] > 0:
            self.log("clips", float(batch["n_clips"]))
        # the labels are collated into a tensor: this one syncs
        if batch["label"].max() > 2:
            loss = loss * 0
        return loss

    def validation_step(self, batch, batch_idx):
        # `index` is a Python int in the training collate, but the validation loader
        # default-collates the dataset's items: a tensor on the device, read every step
        return self.net(batch["rays"][:, :16]).sum() + batch["index"].item()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Segmenter(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(3, 4)

    def training_step(self, batch, batch_idx):
        points, scene, packed = batch
        logits = self.net(points)
        self.score_step(logits, scene.points, scene.regions)
        # a record with `.to` is moved with the batch: this copy waits for the device
        self.log("nodes", packed.nodes.cpu().sum())
        self.report_step(Scores(logits))
        return logits.mean()

    def report_step(self, scores):
        # a record the step builds holds its device tensors: this copy waits
        return scores.logits.cpu()

    def score_step(self, logits, full_points, regions):
        # the scene record stays on the host: these are CPU tensors
        full = full_points.cpu()
        first = regions[0].cpu()
        # the step's logits are on the device: this copy waits for it
        coarse = logits.detach().cpu()
        return full, first, coarse

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
