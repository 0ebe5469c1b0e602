import torch
from torch_cluster import knn_graph

from hits.component import Component


class EdgeRule(Component):
    def forward(self, pos):
        return self.connect(pos)

    def connect(self, pos):
        raise NotImplementedError


class NearestHits(EdgeRule):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def connect(self, pos):
        return knn_graph(pos, self.k)


class CloseHits(EdgeRule):
    def __init__(self, cutoff):
        super().__init__()
        self.cutoff = cutoff

    def connect(self, pos):
        close = torch.cdist(pos, pos) < self.cutoff
        return close.nonzero().t()


class HitGraph(Component):
    """Turns the hits of one event into a graph: run by the dataset, per event."""

    def __init__(self, edges: EdgeRule, min_charge=0.25):
        super().__init__()
        self.edges = edges
        self.min_charge = min_charge

    def forward(self, hits):
        hits = hits[hits[:, 3] > self.min_charge]
        first = torch.nonzero(hits[:, 4] == 1)
        return hits, self.edges(hits[:, :3]), len(first.tolist())


class Voxels(Component):
    """Voxelises the hits: run by the dataset and by the network's forward too."""

    def forward(self, hits):
        return torch.unique(hits[:, :3].long(), dim=0)
