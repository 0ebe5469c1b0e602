import lightning as L
import torch
from torch import nn

from hits.component import Component
from hits.graphs import HitGraph, Voxels


class EventNet(Component):
    def __init__(self, voxels: Voxels):
        super().__init__()
        self.voxels = voxels
        self.proj = nn.Linear(5, 1)

    def forward(self, nodes):
        kept = nodes[nodes[:, 0] > 0]
        return self.proj(kept).sum() + self.voxels(nodes).float().sum()


class EventModel(L.LightningModule):
    def __init__(self, backbone: Component, graph: HitGraph):
        super().__init__()
        self.backbone = backbone
        self.graph = graph  # kept to save with the checkpoint; the dataset runs it

    def training_step(self, batch, batch_idx):
        nodes, edges, voxels = batch
        return self.backbone(nodes)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
