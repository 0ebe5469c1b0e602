import lightning as L

from .metrics import spread


class EpochReport(L.Callback):
    def __init__(self):
        self.rows = []

    def on_train_epoch_end(self, trainer, pl_module):
        self.rows.append((trainer.current_epoch, spread(pl_module.losses), max(pl_module.losses)))

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if pl_module.grad_norms:
            trainer.progress_bar_callback.set_postfix(norm=pl_module.grad_norms[-1])
