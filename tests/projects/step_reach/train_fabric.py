"""The same model trained in a hand-written Fabric loop."""

import lightning as L
import torch

from lossy.losses import focal_loss, report
from lossy.model import Tagger


def train(fabric, model, optimizer, loader, steps):
    for step, (x, y) in enumerate(loader):
        logits = model.head(model.body(x))
        loss = focal_loss(logits, y)
        fabric.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        fabric.print(f"step {step}: loss {loss.item():.4f} acc {report(logits, y)}")
        if step == steps:
            break
    fabric.print(f"last loss {loss.item():.4f}")


def main():
    fabric = L.Fabric(accelerator="tpu", devices="auto", precision="bf16-true")
    model = Tagger()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model, optimizer = fabric.setup(model, optimizer)
    data = torch.utils.data.TensorDataset(torch.randn(512, 128), torch.randint(0, 16, (512,)))
    loader = fabric.setup_dataloaders(torch.utils.data.DataLoader(data, batch_size=64))
    train(fabric, model, optimizer, loader, steps=100)


if __name__ == "__main__":
    main()
