import lightning as L
import torch


class PeakMemory(L.Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        pl_module.log("peak_mem", torch.cuda.max_memory_allocated() / 2**30)
