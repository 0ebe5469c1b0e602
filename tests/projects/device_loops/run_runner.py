"""Builds the runner on a CUDA-or-CPU device string."""

import torch
from torch import nn

from epoch_runner import EpochRunner


def main() -> None:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    batches = [(torch.randn(4, 16), torch.tensor([0, 1, 2, 3]))]
    runner = EpochRunner(device, nn.Linear(16, 4), batches)
    runner.train_epoch()


if __name__ == "__main__":
    main()
