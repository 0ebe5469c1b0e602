import copy

import numpy as np
import torch
from torch.utils.data import Dataset

from hits.graphs import HitGraph, Voxels


class EventDataset(Dataset):
    def __init__(self, files, graph: HitGraph, voxels: Voxels):
        self.files = files
        self._graph = copy.deepcopy(graph)
        self._voxels = voxels

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        hits = torch.from_numpy(np.load(self.files[index]))
        nodes, edges, first = self._graph(hits)
        return nodes, edges, self._voxels(hits)
