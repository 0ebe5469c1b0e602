"""Mask helpers whose size parameter defaults to the batch's own longest length."""

import torch


def prefix_mask(counts, width=None):
    # Every call of the project passes `width`: this branch never runs.
    if width is None:
        width = counts.max()
    steps = torch.arange(width, device=counts.device)
    return steps[None, :] < counts[:, None]


def window_mask(counts, width=None):
    # The only call without `width` passes counts built on the host.
    if width is None:
        width = counts.max()
    return torch.arange(width)[None, :] < counts[:, None]


def valid_mask(counts, width=None):
    # The step leaves `width` out with the device's counts: a read every step.
    if width is None:
        width = counts.max()
    return torch.arange(width, device=counts.device)[None, :] < counts[:, None]
