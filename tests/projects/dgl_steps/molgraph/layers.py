import dgl
import dgl.function as fn
import torch
from torch import nn


class EdgeGate(nn.Module):
    """Message passing on a DGL graph: messages gated by the edge features."""

    def __init__(self, width):
        super().__init__()
        self.gate = nn.Linear(width, width)

    def forward(self, graph, h):
        with graph.local_scope():
            graph.ndata["h"] = h
            graph.edata["g"] = torch.sigmoid(self.gate(graph.edata["e"]))
            graph.update_all(fn.u_mul_e("h", "g", "m"), fn.sum("m", "out"))
            return graph.ndata["out"]


class Encoder(nn.Module):
    def __init__(self, width=64, depth=3):
        super().__init__()
        self.layers = nn.ModuleList([EdgeGate(width) for _ in range(depth)])

    def forward(self, graph):
        h = graph.ndata["x"]
        for layer in self.layers:
            h = h + layer(graph, h)
        graph.ndata["x"] = h
        return [g.ndata["x"] for g in dgl.unbatch(graph)]
