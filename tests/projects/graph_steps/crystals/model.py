import lightning as L
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

from .layers import Stack
from .losses import per_graph_mse, per_graph_type_loss
from .optim import SparseLamb
from .heads import HEADS, Head
from .scalers import MeanScaler, RobustScaler


class CrystalModel(L.LightningModule):
    def __init__(self, width=128, depth=4, num_types=100, scaling="mean"):
        super().__init__()
        if scaling == "mean":
            self.scaler = MeanScaler()
        else:
            self.scaler = RobustScaler()
        self.embed = nn.Embedding(num_types, width)
        self.stack = Stack(width, depth)
        self.coords = nn.Linear(width, 3)
        self.types = nn.Linear(width, num_types)
        self.num_types = num_types
        self.checked = False
        self.head: Head = build_head(width)

    def prepare_data(self):
        self.train_set = load_crystals("train")

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=32, drop_last=True, num_workers=4)

    def training_step(self, batch, batch_idx):
        encode = self.stack.forward_checked if self.checked else self.stack.forward
        h = encode(self.scaler(self.embed(batch.atom_types)))
        coord = per_graph_mse(self.coords(h), batch.pos, batch.batch, batch.num_graphs)
        kind = per_graph_type_loss(self.types(h), batch.atom_types, batch.batch)
        noise = F.one_hot(batch.atom_types, num_classes=self.num_types).float()
        stable = self.head.loss(h, batch.stable)
        return coord + kind + noise.mean() + stable

    def configure_optimizers(self):
        return SparseLamb(self.parameters())


def build_head(width, kind="binary"):
    return HEADS[kind](width)


def load_crystals(split):
    raise NotImplementedError(split)
