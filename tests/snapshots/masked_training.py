"""A segmentation and tagging module written for GPUs: masked losses, masked metrics, counts
through nonzero, a running loss read with .item(), a debugging print, a loss clamp in Python."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn


class SegTagger(L.LightningModule):
    def __init__(self, num_classes: int = 21, ignore_index: int = 255):
        super().__init__()
        self.num_classes = num_classes
        self.ignore_index = ignore_index
        self.backbone = nn.Conv2d(3, num_classes, 3, padding=1)
        self.depth_head = nn.Conv2d(3, 1, 3, padding=1)
        self.depth_loss = nn.SmoothL1Loss(beta=0.5)
        self.running_loss = 0.0

    def forward(self, images):
        return self.backbone(images), self.depth_head(images).squeeze(1)

    def training_step(self, batch, batch_idx):
        images, labels, depth = batch
        logits, pred_depth = self(images)
        valid = labels != self.ignore_index
        seg_loss = F.cross_entropy(logits.permute(0, 2, 3, 1)[valid], labels[valid])
        has_depth = depth > 0
        depth_loss = self.depth_loss(pred_depth[has_depth], depth[has_depth])
        loss = seg_loss + 0.5 * depth_loss
        if loss > 100:
            loss = loss / 100
        n_valid = len(valid.nonzero())
        print(loss)
        self.running_loss = 0.9 * self.running_loss + 0.1 * loss.item()
        self.log("train/valid_pixels", n_valid)
        return loss

    def validation_step(self, batch, batch_idx):
        images, labels, depth = batch
        logits, pred_depth = self(images)
        preds = logits.argmax(1)
        valid = labels != self.ignore_index
        preds = preds[valid]
        labels = labels[valid]
        accuracy = preds.eq(labels).float().mean()
        depth_error = (pred_depth[depth > 0] - depth[depth > 0]).abs().mean()
        present = len(torch.unique(labels))
        self.log_dict({"val/acc": accuracy, "val/depth_l1": depth_error, "val/classes": present})

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)
