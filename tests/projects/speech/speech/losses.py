import torch
import torch.nn.functional as F


def valid_frames(targets, blank):
    return (targets != blank) * (targets >= 0)


def masked_ce(logits, targets, blank=0):
    valid = valid_frames(targets, blank)
    return F.cross_entropy(logits[valid], targets[valid])


def diversity(codes):
    used = torch.unique(codes)
    return used.numel() / codes.numel()


class SmoothL1(torch.nn.Module):
    def forward(self, pred, target, weights):
        diff = (pred - target).abs()
        if diff.max() > 1e4:
            diff = diff.clamp(max=1e4)
        return (diff * weights).mean()
