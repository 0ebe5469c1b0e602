import lightning as L
import torch

from data import TrackData

KINDS = {"short": 1, "long": 4}


def split(flat: torch.Tensor, lengths: torch.Tensor) -> list:
    # `lengths` is the collate's numpy array: its max and its items are host numbers
    longest = int(lengths.max().item())
    out, start = [], 0
    for length in lengths:
        out.append(flat[start : start + int(length.item())][:longest])
        start += int(length.item())
    return out


def per_kind(scores, sizes, names):
    # `sizes == KINDS[name]` compares a numpy array with a number: a host mask
    found = {}
    for name in names:
        chosen = sizes == KINDS[name]
        found[name] = scores[chosen].mean()
    return found


class TrackModel(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(3, 1)

    def training_step(self, batch, batch_idx):
        flat, lengths, tags = batch
        pieces = split(self.net(flat), lengths)
        if lengths.max().item() > 3:
            self.print(tags[0])
        return sum(p.sum() for p in pieces)

    def validation_step(self, batch, batch_idx):
        scores = self.net(batch["points"]).sum(dim=(1, 2))
        if batch["sizes"].max().item() > 3:
            self.print("long tracks")
        kinds = per_kind(scores, batch["sizes"], ["short", "long"])
        self.log("short", kinds["short"])
        # `counts` is collated into a tensor: moved to the device, read every step
        self.log("longest", float(batch["counts"].max().item()))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    L.Trainer(accelerator="tpu").fit(TrackModel(), datamodule=TrackData())


if __name__ == "__main__":
    main()
