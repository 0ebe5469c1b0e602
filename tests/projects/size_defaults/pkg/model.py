import lightning as L
import torch

from pkg.masks import prefix_mask, valid_mask, window_mask


class Tagger(L.LightningModule):
    def training_step(self, batch, batch_idx):
        tokens, counts = batch
        hidden = self.encoder(tokens)
        keep = prefix_mask(counts, hidden.shape[1])
        crops = torch.tensor([len(c) for c in self.crop_table])
        windows = window_mask(crops)
        padded = valid_mask(counts)
        loss = (hidden * keep[..., None]).mean() + windows.float().mean()
        return loss + padded.float().mean()

    def validation_step(self, batch, batch_idx):
        tokens, counts = batch
        hidden = self.encoder(tokens)
        return prefix_mask(counts, width=hidden.size(1)).float().mean()
