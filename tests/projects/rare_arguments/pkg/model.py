from pathlib import Path

import lightning as L
import torch

from pkg.render import label_blobs, overlay


class Segmenter(L.LightningModule):
    """The dump runs only when a call passes `dump_dir`, and only the first batch's call
    (under a debug flag that defaults off) passes one: by keyword in training, by
    position in validation."""

    def __init__(self, debug: bool = False):
        super().__init__()
        self.debug = debug
        self.net = torch.nn.Conv2d(3, 1, 3, padding=1)

    def _shared(self, batch, stage, dump_dir=None):
        images, masks = batch
        scores = self.net(images).sigmoid()
        loss = torch.nn.functional.binary_cross_entropy(scores, masks)
        if dump_dir is not None:
            torch.save(images.detach().cpu(), dump_dir / f"{stage}_images.pt")
            torch.save(label_blobs(scores[0]).cpu(), dump_dir / f"{stage}_blobs.pt")
        return loss

    def training_step(self, batch, batch_idx):
        if self.debug and batch_idx == 0:
            out = Path(self.trainer.log_dir)
            loss = self._shared(batch, "train", dump_dir=out)
        else:
            loss = self._shared(batch, "train")
        self.log("loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        if batch_idx == 0:
            loss = self._shared(batch, "val", Path(self.trainer.log_dir))
        else:
            loss = self._shared(batch, "val")
        self.log("val_loss", loss)


class Tracker(L.LightningModule):
    """`quiet` defaults to True; only the periodic call turns it off."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(8, 1)
        self.seen = []
        self.blobs = []

    def _loss(self, batch, quiet=True):
        x, y = batch
        pred = self.net(x)
        loss = (pred - y).pow(2).mean()
        if not quiet:
            self.seen.append(loss.detach().cpu())
            self.blobs.append(label_blobs(pred.squeeze(-1)))
        return loss

    def training_step(self, batch, batch_idx):
        if self.global_step % 200 == 0:
            loss = self._loss(batch, quiet=False)
        else:
            loss = self._loss(batch)
        return loss


class Tracer(L.LightningModule):
    """A first-batch call passes `trace=True`, but so does a call on every batch: the
    traced branch runs every step and its findings stay."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(8, 1)

    def _loss(self, batch, trace=False):
        x, y = batch
        pred = self.net(x)
        if trace:
            print(pred.mean().item())
        return (pred - y).abs().mean()

    def training_step(self, batch, batch_idx):
        if batch_idx == 0:
            self._loss(batch, trace=True)
        return self._loss(batch, True)


class Painter(L.LightningModule):
    """The first batch dumps with a literal, every other batch with the module's own
    setting (not a literal): the dump may run every step."""

    def __init__(self, paint: bool = True):
        super().__init__()
        self.paint = paint
        self.net = torch.nn.Conv2d(3, 1, 1)
        self.frames = []

    def _step(self, batch, paint=False):
        images, masks = batch
        scores = self.net(images).sigmoid()
        if paint:
            self.frames.append(overlay(images[0], scores[0]))
        return (scores - masks).abs().mean()

    def training_step(self, batch, batch_idx):
        if batch_idx == 0:
            loss = self._step(batch, paint=True)
        else:
            loss = self._step(batch, paint=self.paint)
        return loss


class Handed(L.LightningModule):
    """The first batch passes the flag, but the helper is also handed on as a value (a call
    the model cannot follow): its branch stays reached every step."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(8, 1)

    def _loss(self, batch, show=False):
        x, y = batch
        pred = self.net(x)
        if show:
            print(pred.max().item())
        return (pred - y).abs().mean()

    def training_step(self, batch, batch_idx):
        step = self._loss
        if batch_idx == 0:
            loss = self._loss(batch, show=True)
        else:
            loss = step(batch, show=False)
        return loss


class Inspector(L.LightningModule):
    """A verbose flag (off by default) is the only gate that passes `inspect` (by position)."""

    def __init__(self, verbose: bool = False):
        super().__init__()
        self.verbose = verbose
        self.net = torch.nn.Linear(8, 1)

    def _loss(self, batch, inspect=False):
        x, y = batch
        pred = self.net(x)
        if inspect:
            self.spread = pred.std().item() + label_blobs(pred.squeeze(-1)).numel()
        return (pred - y).abs().mean()

    def training_step(self, batch, batch_idx):
        if self.verbose:
            loss = self._loss(batch, True)
        else:
            loss = self._loss(batch)
        return loss
