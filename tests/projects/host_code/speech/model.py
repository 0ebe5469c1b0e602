import lightning as L
import torch
from torch import nn

from speech.scoring import EditDistance


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(80, 256)

    def forward(self, feats, lengths, stream_for_inference=False):
        hidden = self.proj(feats)
        if stream_for_inference:
            hidden = hidden.cpu()  # streaming inference hands frames to the host
        return hidden


class Recognizer(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.head = nn.Linear(256, 32)
        self.best = []

    def training_step(self, batch, batch_idx):
        feats, lengths, labels = batch
        logits = self.head(self.encoder(feats, lengths))
        return nn.functional.cross_entropy(logits.transpose(1, 2), labels)

    def validation_step(self, batch, batch_idx):
        feats, lengths, labels = batch
        self.best.append((self.head(self.encoder(feats, lengths)).argmax(-1), labels))

    def on_validation_epoch_end(self):
        score = EditDistance()
        errors = [score(hyp, ref) for hyp, ref in self.best]
        self.log("wer", sum(errors) / max(len(errors), 1))
        self.best.clear()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)
