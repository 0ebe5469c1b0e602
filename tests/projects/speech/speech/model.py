import lightning as L
import numpy as np
import torch
from torch import nn

from .losses import SmoothL1, diversity, masked_ce
from .metrics import TokenErrorRate
from .plotting import plot_alignment


class SpeechModel(L.LightningModule):
    def __init__(self, vocab: int = 32):
        super().__init__()
        self.encoder = nn.LSTM(80, 256, batch_first=True)
        self.head = nn.Linear(256, vocab)
        self.expert = nn.Linear(256, 256)
        self.duration_loss = SmoothL1()
        self.ter = TokenErrorRate()
        self.rng = np.random.default_rng(0)
        self.stats_ready = False

    def forward(self, feats):
        hidden, _ = self.encoder(feats)
        return self.head(hidden)

    def _losses(self, batch):
        feats, targets, lengths, durations = batch
        logits = self(feats)
        ce = masked_ce(logits.flatten(0, 1), targets.flatten())
        dur = self.duration_loss(logits.mean(-1), durations, torch.ones_like(durations))
        return ce + dur, logits

    def training_step(self, batch, batch_idx):
        if not self.stats_ready:
            self.feature_scale = batch[0].std().item()
            self.stats_ready = True
        loss, logits = self._losses(batch)
        if loss > 50:
            loss = loss / 10
        self.expert.cpu()
        noise = self.rng.normal(size=4)
        self.log("noise", float(noise.mean()))
        self.log("train_loss", loss)
        self.log("diversity", diversity(logits.argmax(-1)))
        return loss

    def validation_step(self, batch, batch_idx):
        loss, logits = self._losses(batch)
        self.ter.update(logits.argmax(-1), batch[1], batch[2])
        if batch_idx == 0:
            plot_alignment(logits)
        if self.global_step % 1000 == 0:
            print("validation loss", loss.item())
        self.log("val_loss", loss)
