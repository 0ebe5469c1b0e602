"""A loop hard-wired to CUDA (`.cuda()`): it cannot run on a TPU host at all."""

import torch
from torch import nn


def run_epoch(model: nn.Module, loader, optimizer) -> float:
    seen = 0.0
    for step, (inputs, targets) in enumerate(loader):
        inputs = inputs.cuda(non_blocking=True)
        targets = targets.cuda(non_blocking=True)
        loss = nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step}: {loss.item():.3f}")
        seen += loss.item()
    return seen


def main() -> None:
    model = nn.Linear(8, 3).cuda()
    optimizer = torch.optim.Adam(model.parameters())
    run_epoch(model, [(torch.randn(2, 8), torch.tensor([0, 1]))], optimizer)


if __name__ == "__main__":
    main()
