import lightning as L
import torch
import torch_xla.core.xla_model as xm
from torch import nn


class TinyLM(L.LightningModule):
    def __init__(self, vocab: int = 1000, width: int = 256):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        positions = torch.arange(tokens.size(1))
        hidden = self.embed(tokens) + self.embed(positions)[None]
        return self.head(hidden)

    def training_step(self, batch, batch_idx):
        (tokens,) = batch
        logits = self(tokens[:, :-1])
        return nn.functional.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())

    def on_train_epoch_end(self):
        if self.global_rank == 0:
            xm.save(self.state_dict(), f"epoch-{self.current_epoch}.pt")
