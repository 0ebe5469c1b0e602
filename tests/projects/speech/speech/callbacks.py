import torch
import lightning as L


class GradNormMonitor(L.Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        loss = outputs["loss"]
        if torch.isnan(loss):
            trainer.should_stop = True

    def on_train_epoch_end(self, trainer, pl_module):
        print(pl_module.trainer.callback_metrics["train_loss"].item())
