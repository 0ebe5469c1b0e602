"""The device is chosen in the `__main__` block and handed down through two functions."""

import argparse

import torch
from torch import nn


def embed(model: nn.Module, loader, device):
    rows = []
    for images, _ in loader:
        rows.append(model(images.to(device)))
    return torch.cat(rows)


def fit_probe(features, labels, device, epochs: int) -> float:
    probe = nn.Linear(features.shape[1], 10).to(device)
    optimizer = torch.optim.Adam(probe.parameters())
    seen = 0.0
    for _ in range(epochs):
        loss = nn.functional.cross_entropy(probe(features.to(device)), labels.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        seen += loss.item()
    return seen


def probe_features(model: nn.Module, loader, device) -> float:
    features = embed(model, loader, device)
    return fit_probe(features, torch.zeros(len(features), dtype=torch.long), device, 5)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    args = parser.parse_args()
    args.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    encoder = nn.Linear(8, 4).to(args.device)
    probe_features(encoder, [(torch.randn(2, 8), torch.tensor([0, 1]))], args.device)
