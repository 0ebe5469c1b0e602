"""Plotting helpers the model calls with host copies (and one it calls with device tensors)."""

import torch
from torchmetrics import PearsonCorrCoef, SpearmanCorrCoef


def draw_panel(folder, pred, real, tag):
    # every call passes `.cpu()` copies: the metric built here computes on the CPU
    corr = PearsonCorrCoef()
    title = "%s %s r=%.3f" % (folder, tag, corr(pred.view(-1), real.view(-1)).item())
    spread = torch.std(pred - real)
    if spread > 1.0:
        title += " (wide)"
    return title, spread.item()


def rank_score(pred, real):
    # one call passes the device prediction: the `.item()` reads the TPU
    rank = SpearmanCorrCoef()
    return rank(pred, real).item()


def callback_score(pred, real):
    # handed out as a callback too: its callers are not all seen
    corr = PearsonCorrCoef()
    return corr(pred, real).item()


SCORERS = {"pearson": callback_score}
