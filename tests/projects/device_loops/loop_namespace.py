"""The device rides on the parsed arguments (`args.device`), set to a CUDA-or-CPU choice."""

import argparse

import torch
from torch import nn


def train(args, model: nn.Module, loader, optimizer) -> float:
    correct = 0.0
    for batch, target in loader:
        batch, target = batch.to(args.device), target.to(args.device)
        output = model(batch)
        loss = nn.functional.nll_loss(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        correct += (output.argmax(1) == target).sum().item()
    return correct


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    args.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(4, 2), nn.LogSoftmax(-1)).to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    train(args, model, [(torch.randn(2, 4), torch.tensor([0, 1]))], optimizer)


if __name__ == "__main__":
    main()
