import torch
from torch.utils.data import Dataset


class LengthSet(Dataset):
    def __init__(self, lengths):
        self.lengths = lengths

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, index):
        return torch.zeros(self.lengths[index])
