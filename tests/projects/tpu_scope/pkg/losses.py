import torch.nn.functional as F


def masked_mean(logits, target):
    keep = target != -100
    return F.cross_entropy(logits[keep], target[keep])
