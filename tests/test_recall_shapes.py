"""Recall of the default rules on shapes the held-out reading found missed (issue 21): each
shape is reported where it runs every step, and its host-side twin stays silent."""

from __future__ import annotations

import textwrap

import pytest

from tpulint.config.settings import Config
from tpulint.engine.source import check_source

HEAD = "import lightning as L\nimport torch\nfrom torch import nn\n\n\n"


def codes(source: str, select: str = "TPU1,TPU2") -> list[tuple[str, int]]:
    config = Config.from_mapping({"select": select.split(",")})
    found = check_source(HEAD + textwrap.dedent(source).lstrip("\n"), "model.py", config)
    return sorted((d.code, d.start.line - HEAD.count("\n")) for d in found)


REPORTED = {
    # A helper annotated `-> float` that returns a tensor computed from its tensor arguments:
    # what the step passes decides what it gets back.
    "a device tensor returned by a helper annotated as a float": (
        """
        def spread_error(a: torch.Tensor, b: torch.Tensor) -> float:
            gap = (a - b).mean(dim=-1)
            return gap.mean()

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

            def training_step(self, batch, batch_idx):
                out = self.proj(batch["x"])
                err = spread_error(out, batch["y"])
                self.log("err", err.mean().item())
                return out.sum()
        """,
        [("TPU102", 13)],
    ),
    # A helper given a sub-module's output on the step's batch: device tensors, so a branch
    # on a reduction of them (and an assert) reads the device; the warning the branch
    # formats runs only when the data says so (no finding of its own).
    "branches on reductions in a helper fed a module's output": (
        """
        import logging

        def unit_rows(vecs):
            norms = torch.sqrt(torch.sum(vecs**2, dim=1))
            if torch.min(norms) < 1e-6:
                logging.warning(f"short rows: {torch.min(norms)}")
                norms = norms + 1e-6
            cos = torch.abs(torch.sum(vecs[:1] * vecs, dim=1))
            assert torch.max(cos) <= 1.0
            return vecs / norms[:, None]

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(3, 3)

            def training_step(self, batch, batch_idx):
                vecs = self.proj(batch["pos"])
                return unit_rows(vecs).sum()
        """,
        [("TPU104", 5), ("TPU104", 9)],
    ),
    # A sub-module's `forward(self, data)` the step reaches through `self.net(batch)`: what
    # it computes from `data` and hands a helper is on the device.
    "a helper called from a sub-module's forward with values of its data": (
        """
        def rescale(deltas):
            lengths = deltas.norm(dim=-1)
            if lengths.max() > 10.0:
                deltas = deltas / 10.0
            return deltas

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(3, 3)

            def forward(self, data):
                src, dst = data.links
                deltas = data.pos[src] - data.pos[dst]
                return self.lin(rescale(deltas))

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.net = Encoder()

            def training_step(self, batch, batch_idx):
                return self.net(batch).sum()
        """,
        [("TPU104", 3)],
    ),
    # torch_scatter's ops are torch ops: their counts, beside device inputs, are device
    # tensors (a branch on their maximum, repeats of `repeat_interleave`).
    "counts from a torch_scatter op in a helper": (
        """
        from torch_scatter import segment_coo

        def capped_slots(owner, dist, limit):
            ones = owner.new_ones(1).expand_as(owner)
            per_node = segment_coo(ones, owner, dim_size=owner.size(0))
            most = per_node.max()
            if most <= limit:
                return dist
            slot = torch.repeat_interleave(torch.cumsum(per_node, 0) - per_node, per_node)
            return dist + slot

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(3, 1)

            def training_step(self, batch, batch_idx):
                dist = self.proj(batch["pos"]).squeeze(-1)
                return capped_slots(batch["owner"], dist, 8).sum()
        """,
        [("TPU104", 7), ("TPU201", 9)],
    ),
    # The module's own weights are on the device: a count read from each one is a sync
    # per parameter and step.
    "a count read from every parameter's gradient in the step": (
        """
        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

            def training_step(self, batch, batch_idx):
                loss = self.proj(batch["x"]).sum()
                dead = sum(
                    int(torch.count_nonzero(p.grad == 0))
                    for p in self.parameters()
                    if p.grad is not None
                )
                for name, p in self.named_parameters():
                    self.log(name, float(p.norm()))
                self.log("dead", dead)
                return loss
        """,
        [("TPU103", 9), ("TPU102", 14)],
    ),
    # A length the loader collates as a tensor (Lightning moves it to the device), passed
    # to a helper that makes a range of it: the size is read from the device.
    "a size parameter every call passes a device tensor": (
        """
        def pad_mask(lengths, width=None):
            if width is None:
                width = lengths.max().item()
            ids = torch.arange(0, width).to(lengths.device)
            return ids[None, :] >= lengths[:, None]

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

            def training_step(self, batch, batch_idx):
                mask = pad_mask(batch["lens"], batch["max_len"])
                out = self.proj(batch["x"]).masked_fill(mask[..., None], 0.0)
                return out.sum()
        """,
        [("TPU101", 3), ("TPU205", 4)],
    ),
    # The same parameter used as a size twice: one finding, at its first use.
    "a device size parameter used in two sizes": (
        """
        def pad_mask(lengths, width):
            ids = torch.arange(0, width, device=lengths.device)
            return ids[None, :].expand(lengths.size(0), width) >= lengths[:, None]

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

            def training_step(self, batch, batch_idx):
                mask = pad_mask(batch["lens"], batch["max_len"])
                return self.proj(batch["x"]).masked_fill(mask[..., None], 0.0).sum()
        """,
        [("TPU205", 2)],
    ),
    # A loss module the base class stores from its constructor: `self.loss(...)` is a
    # call of that module (device tensors out), not a method of the class.
    "a loss attribute a base class stores, compared in a sampling loop": (
        """
        from abc import ABC

        class Base(L.LightningModule, ABC):
            def __init__(self, loss=nn.MSELoss()):
                super().__init__()
                self.loss = loss

        class Sampler(Base):
            def __init__(self, draws: int = 4):
                super().__init__(loss=nn.L1Loss())
                self.draws = draws
                self.proj = nn.Linear(4, 4)

            def training_step(self, batch, batch_idx):
                x, y = batch
                best = self.loss(self.proj(x), y)
                for _ in range(self.draws):
                    trial = self.loss(self.proj(x + torch.randn_like(x)), y)
                    if trial < best:
                        best = trial
                return best
        """,
        [("TPU104", 19)],
    ),
    # A size parameter read into a Python number first: the read is TPU101's finding, the
    # slices by the number are no second one.
    "a size parameter read with .item() before slicing": (
        """
        def first_frames(frames, count):
            count = count.item()
            return frames[:count]

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

            def training_step(self, batch, batch_idx):
                kept = first_frames(self.proj(batch["x"]), batch["count"])
                return kept.sum()
        """,
        [("TPU101", 2)],
    ),
    # A sub-module attribute of a class with a project mixin base: a call of that module
    # (not a method of the class), whose `list(t)` hands back the rows of a device tensor.
    "rows of a device tensor a sub-module returns as a list, copied to the host": (
        """
        class Patches(nn.Module):
            def forward(self, x):
                out = torch.zeros((2, x.shape[0], 4), device=x.device)
                out[:, :, :] = x[None, :, :4]
                return list(out)

        class BankMixin:
            def reset_bank(self):
                self.bank = []

        class Store(BankMixin, nn.Module):
            def __init__(self):
                super().__init__()
                self.patches = Patches()
                self.bank = []

            def forward(self, x):
                for rows in self.patches(x):
                    self.bank.append(rows.to("cpu"))
                return x

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.store = Store()

            def training_step(self, batch, batch_idx):
                return self.store(batch["x"]).sum()
        """,
        [("TPU103", 19)],
    ),
    # 0-dim device tensors listed as data of a new tensor: each one is read on the host.
    "device scalars listed as data of a new tensor": (
        """
        def cell_ids(offsets):
            span = offsets.max() - offsets.min() + 1
            weights = offsets.new_tensor([[1, span, span**2]])
            return (offsets * weights).sum(-1)

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(3, 3)

            def training_step(self, batch, batch_idx):
                offsets = self.proj(batch["cells"]).round()
                return cell_ids(offsets).sum()
        """,
        [("TPU103", 3)],
    ),
}

SILENT = {
    # The annotation holds where the body reads the number on the host itself.
    "a helper annotated as a float that returns a Python number": (
        """
        def spread_error(a: torch.Tensor, b: torch.Tensor) -> float:
            return float(len(a) - len(b))

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

            def training_step(self, batch, batch_idx):
                out = self.proj(batch["x"])
                err = spread_error(out, batch["y"])
                if err > 0:
                    out = out * 2
                return out.sum()
        """
    ),
    # A tensor built from Python numbers and shapes only, and a copy of a tensor.
    "a new tensor listed from numbers and shapes": (
        """
        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(3, 3)

            def training_step(self, batch, batch_idx):
                out = self.proj(batch["x"])
                n = out.shape[0]
                scale = out.new_tensor([1.0, n, n**2])
                total = torch.tensor(out.sum() * 0.5)
                return (out * scale[:1]).sum() + total
        """
    ),
    # A size parameter every call passes a Python number (a shape).
    "a size parameter given shapes": (
        """
        def pad_mask(lengths, width):
            ids = torch.arange(0, width, device=lengths.device)
            return ids[None, :] >= lengths[:, None]

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

            def training_step(self, batch, batch_idx):
                x = batch["x"]
                mask = pad_mask(batch["lens"], x.shape[1])
                return self.proj(x).masked_fill(mask[..., None], 0.0).sum()
        """
    ),
    # A record of settings the forward's data carries (a neighbour list's "order", its
    # cutoff): its entries are Python values, whatever the data's tensors are.
    "a settings record of a sub-module's data checked by a method": (
        """
        class Encoder(nn.Module):
            def __init__(self, cutoff: float = 5.0):
                super().__init__()
                self.cutoff = cutoff
                self.lin = nn.Linear(3, 3)

            def fits(self, pairs):
                return pairs["order"] == 2 and pairs["cutoff"] == self.cutoff

            def forward(self, data):
                pairs = data.pair_lists.get("main")
                if not self.fits(pairs):
                    raise ValueError("pairs built for another model")
                return self.lin(data.pos[pairs["index"][0]])

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.net = Encoder()

            def training_step(self, batch, batch_idx):
                return self.net(batch).sum()
        """
    ),
    # A count a batch object carries as an attribute (`num_graphs`, a property giving a
    # Python number), passed as a size.
    "a size parameter given a batch record's attribute": (
        """
        def pooled(h, owner, count):
            out = torch.zeros(count, h.shape[-1], device=h.device)
            return out.index_add(0, owner, h)

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

            def training_step(self, batch, batch_idx):
                h = self.proj(batch.x)
                return pooled(h, batch.owner, batch.num_graphs).sum()
        """
    ),
    # Parameters counted once, outside the step.
    "parameters read when training starts": (
        """
        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

            def on_train_start(self):
                self.zeros = sum(int(torch.count_nonzero(p == 0)) for p in self.parameters())

            def training_step(self, batch, batch_idx):
                return self.proj(batch["x"]).sum()
        """
    ),
}


@pytest.mark.parametrize("name", sorted(REPORTED))
def test_missed_shapes_are_reported(name: str) -> None:
    source, expected = REPORTED[name]
    assert codes(source) == sorted(expected)


@pytest.mark.parametrize("name", sorted(SILENT))
def test_host_twins_stay_silent(name: str) -> None:
    assert codes(SILENT[name]) == []
