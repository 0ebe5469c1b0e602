"""A loop whose device is its caller's, picked from a configured accelerator: it may be XLA."""

import torch
from torch import nn

from devices import pick_device


def fit(model: nn.Module, loader, device) -> float:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    total = 0.0
    for features, labels in loader:
        features, labels = features.to(device), labels.to(device)
        loss = nn.functional.mse_loss(model(features), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


def main(accelerator: str) -> None:
    device = pick_device(accelerator)
    fit(nn.Linear(4, 1).to(device), [(torch.randn(8, 4), torch.randn(8, 1))], device)


if __name__ == "__main__":
    main("tpu")
