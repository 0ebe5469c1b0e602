"""Values collected every step for the end of the epoch: read there by the module, by a
callback through `pl_module` and by a metrics module; one container also read every step."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn

from .callbacks import EpochReport


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(16, 4)
        self.losses = []
        self.correct = []
        self.embeddings = []
        self.grad_norms = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        loss = F.cross_entropy(logits, y)
        self.losses.append(loss.item())
        self.correct.append((logits.argmax(dim=1) == y).sum().item())
        return loss

    def on_before_optimizer_step(self, optimizer):
        norm = torch.nn.utils.clip_grad_norm_(self.parameters(), 1.0)
        self.grad_norms.append(norm.item())

    def validation_step(self, batch, batch_idx):
        x, _ = batch
        self.embeddings.append(self.net(x).cpu())

    def on_validation_epoch_end(self):
        self.log("emb_norm", torch.cat(self.embeddings).norm())
        self.embeddings.clear()

    def on_train_epoch_end(self):
        self.log("accuracy", sum(self.correct) / (8 * len(self.correct)))
        self.losses.clear()
        self.correct.clear()
        self.grad_norms.clear()

    def configure_callbacks(self):
        return [EpochReport()]
