"""Molecular graphs batched the way graph libraries batch them: one object holding the node
features of every molecule in the batch, the edges, a node-to-graph index and the targets.
Molecules have 4 to 12 atoms, so the node and edge tensors change size from batch to batch
while the targets stay 8x1."""

from dataclasses import dataclass

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset


@dataclass
class GraphBatch:
    x: torch.Tensor  # nodes x features
    edge_index: torch.Tensor  # 2 x edges
    graph_index: torch.Tensor  # nodes: which molecule each atom belongs to
    y: torch.Tensor  # molecules x 1
    num_graphs: int


class Molecules(Dataset):
    def __init__(self, size: int = 512):
        generator = torch.Generator().manual_seed(0)
        self.atoms = torch.randint(4, 13, (size,), generator=generator).tolist()
        self.seeds = torch.randint(0, 2**31, (size,), generator=generator).tolist()

    def __len__(self):
        return len(self.atoms)

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(self.seeds[index])
        atoms = self.atoms[index]
        x = torch.randn(atoms, 16, generator=generator)
        chain = torch.arange(atoms - 1)
        edge_index = torch.stack([chain, chain + 1])
        return x, edge_index, x.sum().reshape(1)


def collate(molecules):
    xs, edges, graph_index, ys, offset = [], [], [], [], 0
    for number, (x, edge_index, y) in enumerate(molecules):
        xs.append(x)
        edges.append(edge_index + offset)
        graph_index.append(torch.full((x.shape[0],), number))
        ys.append(y)
        offset += x.shape[0]
    return GraphBatch(
        torch.cat(xs), torch.cat(edges, dim=1), torch.cat(graph_index), torch.stack(ys), len(ys)
    )


class GraphRegression(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(16, 32)
        self.readout = nn.Linear(32, 1)

    def training_step(self, batch, batch_idx):
        hidden = torch.relu(self.embed(batch.x))
        source, target = batch.edge_index
        hidden = hidden.index_add(0, target, hidden[source])
        pooled = torch.zeros(batch.num_graphs, 32, device=hidden.device)
        pooled = pooled.index_add(0, batch.graph_index, hidden)
        return F.mse_loss(self.readout(pooled), batch.y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def train_dataloader(self):
        return DataLoader(Molecules(), batch_size=8, collate_fn=collate, drop_last=True)
