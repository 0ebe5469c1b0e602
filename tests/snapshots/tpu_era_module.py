"""A Lightning 1.x-era module written for a TPU v3-8, the way the 2021 tutorials did it."""

import os

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

os.environ["XLA_USE_BF16"] = "1"


class TokenClassifier(pl.LightningModule):
    def __init__(self, vocab_size: int = 30000, hidden: int = 300, batch_size: int = 12):
        super().__init__()
        self.save_hyperparameters()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.head = nn.Linear(hidden, 9)

    def forward(self, tokens, lengths):
        longest = lengths.max().item()
        hidden = self.embed(tokens[:, :longest])
        return self.head(hidden)

    def training_step(self, batch, batch_idx):
        tokens, lengths, labels = batch
        logits = self(tokens, lengths)
        mask = labels != -100
        loss = F.cross_entropy(logits[mask], labels[mask])
        if loss > 10:
            print(f"loss exploded: {loss}")
        self.log("train_loss", loss.item(), sync_dist=True)
        xm.mark_step()
        return loss

    def validation_step(self, batch, batch_idx):
        tokens, lengths, labels = batch
        preds = self(tokens, lengths).argmax(-1)
        correct = preds[labels != -100] == labels[labels != -100]
        self.log("val_acc", float(correct.float().mean()))
        if batch_idx == 0:
            self.examples = preds.cpu().numpy()

    def on_validation_epoch_end(self):
        print("epoch done", self.trainer.callback_metrics["val_acc"].item())

    def train_dataloader(self):
        tokens = torch.randint(0, 30000, (1000, 128))
        dataset = TensorDataset(tokens, torch.full((1000,), 128), torch.zeros(1000, 128).long())
        sampler = DistributedSampler(
            dataset, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal(), shuffle=True
        )
        return DataLoader(dataset, batch_size=self.hparams.batch_size, sampler=sampler)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=3e-4)


if __name__ == "__main__":
    trainer = pl.Trainer(tpu_cores=8, precision=16, max_epochs=3, replace_sampler_ddp=False)
    trainer.fit(TokenClassifier())
