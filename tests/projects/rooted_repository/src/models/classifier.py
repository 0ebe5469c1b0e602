import torch
from src.models.base import TaskModule
from src.modules.gate import Gate


class Classifier(TaskModule):
    def __init__(self, evaluator=None, log_freq=100, echo=False):
        super().__init__(evaluator)
        self.log_freq = log_freq
        self.echo = echo
        self.seen = 0
        self.gate = Gate(16)
        self.gated = Gate(16, fused=False, gated=True)

    def training_step(self, batch, batch_idx):
        x, lengths, y = batch
        logits = self.gated(self.gate(x, lengths), lengths)
        loss = torch.nn.functional.cross_entropy(logits, y)
        entropy = -(logits.softmax(-1) * logits.log_softmax(-1)).sum(-1).mean()
        self.seen += 1
        self.train_loss(loss)
        # metric objects: Lightning syncs them once, in compute()
        self.log("train/loss", self.train_loss, on_step=True, sync_dist=True)
        to_log = {"train/loss_again": self.train_loss}
        if self.seen % self.log_freq == 0 or self.seen + 1 == len(self.trainer.train_dataloader):
            self.train_entropy(entropy)
            to_log.update({"train/entropy": self.train_entropy})
        self.log_dict(to_log, on_step=True, sync_dist=True)
        # a tensor: synced every step
        self.log("train/raw_loss", loss, sync_dist=True)
        if self.trainer.is_global_zero and (self.seen % self.log_freq == 0 or self.echo):
            print(loss.item())  # `self.echo` may hold on every step
        return loss
