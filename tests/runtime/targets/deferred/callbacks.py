import lightning as L

from .metrics import loss_summary


class LossHistory(L.Callback):
    """Runs before the module's own `on_train_epoch_end`, which empties the losses."""

    def __init__(self):
        self.history = []
        self.best = float("inf")

    def on_train_epoch_end(self, trainer, pl_module):
        self.history.append(loss_summary(pl_module))
        self.best = min(self.best, min(pl_module.train_losses))
