"""The same loop on an XLA device: it runs on the TPU, its host reads are findings."""

import torch
import torch_xla.core.xla_model as xm
from torch import nn


def fit(model: nn.Module, loader, epochs: int) -> float:
    device = xm.xla_device()
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    total = 0.0
    for _ in range(epochs):
        for features, labels in loader:
            features, labels = features.to(device), labels.to(device)
            loss = nn.functional.mse_loss(model(features), labels)
            optimizer.zero_grad()
            loss.backward()
            xm.optimizer_step(optimizer)
            total += loss.item()
    return total


if __name__ == "__main__":
    fit(nn.Linear(4, 1), [(torch.randn(8, 4), torch.randn(8, 1))], 2)
