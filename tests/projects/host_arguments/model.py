import lightning.pytorch as pl
import torch
from torch import nn

from panels import callback_score, draw_panel, rank_score


def pad_widths(sizes, largest):
    widths = []
    gap = (largest - sizes).detach().cpu()
    for w in reversed(gap):
        widths.append(w.item())  # rows of a CPU copy: host reads
    for w in gap:
        widths.append(int(w.item()))
    return widths


class Regressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(16, 16)

    def training_step(self, batch, batch_idx):
        x, y = batch
        pred = self.net(x)
        return nn.functional.mse_loss(pred, y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        pred = self.net(x)
        for i in range(4):
            draw_panel("val", pred[i].detach().cpu(), y[i].view(4, 4).cpu(), self.current_epoch)
        rank_score(pred[0].cpu(), y[0].cpu())
        rank_score(pred[1], y[1])
        callback_score(pred[2].cpu(), y[2].cpu())
        sizes = torch.tensor(x.shape, device=x.device)
        pad_widths(sizes, sizes.max())
        for v in reversed(pred.sum(dim=1)):
            print(v.item())  # rows of a device tensor: a sync each
        return nn.functional.mse_loss(pred, y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
