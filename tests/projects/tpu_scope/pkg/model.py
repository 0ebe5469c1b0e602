import lightning as L
import torch
from torch import nn

from .losses import masked_mean


class CaptionModel(L.LightningModule):
    def __init__(self, vocab: int = 512, width: int = 256):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.head = nn.Linear(width, vocab)
        self.fused = torch.cuda.is_available() and torch.backends.cuda.matmul.allow_tf32

    def forward(self, tokens):
        return self.head(self.embed(tokens))

    def training_step(self, batch, batch_idx):
        tokens, target = batch
        logits = self(tokens)
        if tokens.is_cuda:
            print(f"peak {torch.cuda.max_memory_allocated()}: {logits.max().item()}")
        if self.fused:
            logits = logits.float()
        return masked_mean(logits, target)

    def validation_step(self, batch, batch_idx):
        tokens, target = batch
        caption = self.generate(tokens[:, :4], steps=16)
        self.log("val_len", caption.size(1))
        return masked_mean(self(tokens), target)

    @torch.no_grad()
    def generate(self, prompt, steps):
        out = prompt
        for _ in range(steps):
            nxt = self(out)[:, -1].argmax(-1, keepdim=True)
            if (nxt == 0).all():
                break
            out = torch.cat([out, nxt], dim=1)
        return out

    def predict_step(self, batch, batch_idx):
        scores = self(batch).softmax(-1)
        return scores.max().item()

    def on_keyboard_interrupt(self, trainer, pl_module):
        torch.cuda.synchronize()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)
