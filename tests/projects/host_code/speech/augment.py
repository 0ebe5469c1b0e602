"""Per-utterance transforms: they run in the data loader's workers, on host tensors."""

import torch
from torch import nn


class TrimSilence(nn.Module):
    def forward(self, wave):
        loud = wave.abs() > 1e-3
        return wave[loud]  # host tensor, per sample: not a TPU step


class Gain(nn.Module):
    def forward(self, wave):
        if wave.abs().max() > 1.0:  # host tensor, per sample
            wave = wave / wave.abs().max()
        return wave


def default_transforms(trim=True):
    transforms = [Gain()]
    if trim:
        transforms.append(TrimSilence())
    return transforms
