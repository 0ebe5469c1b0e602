import lightning as L
import numpy as np
import torch
from scores import *

half = lambda x: x * 0.5


class Renderer(L.LightningModule):
    def training_step(self, batch, batch_idx):
        rays, target = batch
        pred = self(rays)
        err = sq_err(pred, target)
        # a number of a numpy scalar: no device read
        self.log("train/db", to_db(err.detach().item()).item())
        # a lambda of this module on a Python float
        self.log("train/half", half(err.detach().item()))
        # a CPU tensor's number
        self.log("train/gain", gain_db(pred.detach().cpu().mean()).item())
        # the device tensor a lambda returns: read every step
        self.log("train/err", sq_err(pred, target).item())
        return err

    def validation_step(self, batch, batch_idx):
        rays, target = batch
        target = target.cpu()
        chunks = []
        for k in range(0, rays.shape[0], 1024):
            chunks.append(self(rays[k : k + 1024]).cpu())
        image = torch.cat(chunks).reshape(target.shape)
        err = (image - target).abs()
        both = (image.cpu() - target.cpu()).abs().cpu()
        shown = heat(err * 5, (0.0, 1.0))
        self.shown = np.concatenate([shown, heat(both)])
