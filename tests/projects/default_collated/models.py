import lightning as L
import torch

from data import ClipData


class ClipModel(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        frames, lengths, names = batch
        # the default collate made `lengths` a tensor, moved to the device: a sync
        if lengths.max().item() > 5:
            self.print(names[0])
        return self.net(frames).sum()

    def validation_step(self, batch, batch_idx):
        # the same 3-tuple from `stack_clips`, numpy there, a tensor in training: either
        self.log("longest", float(batch[1].max().item()))

    def test_step(self, batch, batch_idx, dataloader_idx=0):
        # `spans` is a tensor from `tensor_windows`
        if batch["spans"].max().item() > 5:
            self.print("long")

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    trainer = L.Trainer(accelerator="tpu")
    model, data = ClipModel(), ClipData()
    trainer.fit(model, datamodule=data)
    trainer.test(model, datamodule=data)


if __name__ == "__main__":
    main()
