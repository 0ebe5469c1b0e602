import torch

from lab.losses import FocalLoss


def check_focal_loss_is_finite():
    loss = FocalLoss()(torch.randn(4, 3), torch.tensor([0, 1, 2, 0]))
    assert torch.isfinite(loss)
