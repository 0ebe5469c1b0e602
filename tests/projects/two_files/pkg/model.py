import lightning as L
import torchmetrics

from pkg.losses import off_diag


class Hits(torchmetrics.Metric):
    def update(self, preds, target):
        keep = target != -1
        self.n += (preds[keep] == target[keep]).sum().item()


class M(L.LightningModule):
    def training_step(self, batch, i):
        z = self.net(batch[0])
        return off_diag(z.T @ z)
