import lightning as L
import torch
from dgl.nn.pytorch import GraphConv
from torch import nn

from molgraph.layers import Encoder
from molgraph.metrics import top_k_hits


class PairModel(L.LightningModule):
    """Scores residue pairs of two DGL graphs."""

    def __init__(self, width=64):
        super().__init__()
        self.encoder = Encoder(width)
        self.head = nn.Bilinear(width, width, 1)

    def embed(self, graph):
        return self.encoder.forward(graph)

    def training_step(self, batch, batch_idx):
        left, right, labels = batch
        scores = self.pair_scores(left, right)
        loss = nn.functional.binary_cross_entropy_with_logits(scores, labels)
        self.log("train_loss", loss.item())
        return loss

    def pair_scores(self, left, right):
        a = torch.cat(self.embed(left))
        b = torch.cat(self.embed(right))
        return self.head(a[:, None].expand(-1, len(b), -1), b[None].expand(len(a), -1, -1))

    def validation_step(self, batch, batch_idx):
        left, right, labels = batch
        scores = self.pair_scores(left, right).flatten()
        k = min(left.num_nodes(), right.num_nodes())
        self.log("val_top_l", top_k_hits(scores, labels.flatten(), k))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class SiteModel(L.LightningModule):
    """A DGL graph convolution held by the module: the step calls it on DGL graphs."""

    def __init__(self, width=64):
        super().__init__()
        self.conv = GraphConv(width, 1)

    def training_step(self, batch, batch_idx):
        graph, labels = batch
        logits = self.conv(graph, graph.ndata["x"]).squeeze(-1)
        loss = nn.functional.binary_cross_entropy_with_logits(logits, labels)
        self.log("site_loss", loss.item())
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class BondModel(L.LightningModule):
    """Plain tensors: no DGL on its path."""

    def __init__(self, width=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x).squeeze(-1), y)
        self.log("bond_loss", loss.item())
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)
