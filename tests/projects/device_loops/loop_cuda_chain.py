"""A hand-written loop whose device is a global CUDA-or-CPU choice: on a TPU host, the CPU."""

import torch
from torch import nn

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def fit(model: nn.Module, loader, epochs: int) -> float:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    total = 0.0
    for _ in range(epochs):
        for features, labels in loader:
            features, labels = features.to(DEVICE), labels.to(DEVICE)
            loss = nn.functional.mse_loss(model(features), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
    return total


if __name__ == "__main__":
    net = nn.Linear(4, 1).to(DEVICE)
    fit(net, [(torch.randn(8, 4), torch.randn(8, 1))], 2)
