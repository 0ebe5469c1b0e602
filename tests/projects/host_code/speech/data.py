import torch
from torch.utils.data import Dataset

from speech.augment import default_transforms


class Utterances(Dataset):
    def __init__(self, waves):
        self.waves = waves
        self.transforms = default_transforms()

    def __len__(self):
        return len(self.waves)

    def __getitem__(self, n):
        wave = self.waves[n]
        for transform in self.transforms:
            wave = transform(wave)
        return torch.nn.functional.pad(wave, (0, 16000 - wave.numel()))
