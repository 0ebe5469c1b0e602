"""A loop whose model is put on `torch.device("cuda")` in the launcher: a CUDA-only loop."""

import torch
from torch import nn


def fit_probe(probe: nn.Module, batches, optimizer) -> float:
    total = 0.0
    for features, labels in batches:
        loss = nn.functional.cross_entropy(probe(features), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


def launch() -> None:
    probe = nn.Linear(6, 2).to(torch.device("cuda:0"))
    optimizer = torch.optim.SGD(probe.parameters(), lr=0.1)
    fit_probe(probe, [], optimizer)


if __name__ == "__main__":
    launch()
