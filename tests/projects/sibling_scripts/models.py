import pytorch_lightning as pl
import torch
import torchmetrics


class TaggerModel(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(16, 4)
        self.test_acc = torchmetrics.Accuracy(task="multiclass", num_classes=4)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        # `score` has no `self`: this call raises TypeError before its body runs
        self.log("val_score", self.score(self.net(x), y))

    def test_step(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        # tested after fitting (train_tpu.py through its helpers): on the TPU
        self.log("test_pos", logits[y > 0].mean())
        self.test_acc(logits, y)

    def score(logits, labels):
        labels[labels == -100] = 0
        return (logits.argmax(-1) == labels).float().mean()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())


class SummaryModel(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(16, 4)

    def training_step(self, batch, batch_idx):
        x, y = batch
        # only train_summary.py builds it: no TPU option, no TPU command runs it
        return self.net(x)[y > 0].sum()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())


class RankModel(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(16, 4)

    def training_step(self, batch, batch_idx):
        x, y = batch
        # train_rank.py has no TPU option, but run_rank.sh runs it with --tpu_cores
        return self.net(x)[y > 0].sum()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
