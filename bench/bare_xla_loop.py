"""The baseline for `tpulint verify`'s overhead: a bare torch_xla data-parallel loop.

    python bench/bare_xla_loop.py --cores 8 --steps 7 --epochs 3 --batch-size 16 --variant ready

The same model, data and steps as `tpulint verify examples/tpu_ready/model.py:LitClassifier`
(LitClassifier's network, its RandomImages(1000) training set, batch size 16 per core, SGD lr
0.05, a DistributedSampler per replica, `steps` steps per epoch; `--variant unready` with
`--batch-size 10` is examples/tpu_unready's step), but no Lightning, no validation and no
recording: replicas are torch_xla's own (`xmp.spawn`, forked like Lightning's launcher), each
step is LitClassifier.training_step's arithmetic plus `xm.optimizer_step`.

On PJRT CPU (no TPU) 8 replica threads deadlock without the documented XLA:CPU workarounds
(../shared/research/runtime.md §1c); the project's `tpulint.runtime.child.xla_cpu.CpuDataParallel`
and `tpulint.runtime.environment.child_environment` provide them, so both sides run with the
same ones.

Prints one JSON line: seconds to import torch and torch_xla, seconds from spawn to the end of
training, and the steps run.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time

START = time.perf_counter()


def configure(cores: int) -> None:
    """The child environment `tpulint verify` uses (set before torch_xla initializes)."""
    from tpulint.runtime.environment import Backend, child_environment

    os.environ.update(child_environment(Backend("CPU"), cores))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="bare torch_xla data-parallel baseline")
    parser.add_argument("--cores", type=int, default=8)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument(
        "--variant",
        choices=("unready", "ready"),
        default="unready",
        help="the training step of examples/tpu_unready (boolean-mask mean, loss.item())"
        " or examples/tpu_ready (torch.where masked mean, the loss kept a tensor)",
    )
    return parser.parse_args()


ARGS = parse_args()
configure(ARGS.cores)

import torch  # noqa: E402 - after the environment is set
import torch.nn.functional as F  # noqa: E402
import torch_xla  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402
import torch_xla.distributed.parallel_loader as pl  # noqa: E402
import torch_xla.distributed.xla_multiprocessing as xmp  # noqa: E402
import torch_xla.runtime as xr  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, Dataset, DistributedSampler  # noqa: E402

IMPORTED = time.perf_counter()


class RandomImages(Dataset):
    """examples/tpu_unready/model.py's dataset, byte for byte the same tensors."""

    def __init__(self, size: int = 1000, seed: int = 0) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.images = torch.randn(size, 1, 16, 16, generator=generator)
        self.labels = torch.randint(0, 10, (size,), generator=generator)
        self.labels[torch.rand(size, generator=generator) < 0.2] = -1

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.images[index], self.labels[index]


def make_net() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 10))


DATASET = RandomImages(1000)
INIT_LOCK = threading.Lock()
BARRIER = threading.Barrier(ARGS.cores)


def training_step(net: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    logits = net(images)
    labeled = labels >= 0
    loss = F.cross_entropy(logits, labels.clamp(min=0), reduction="none")
    if ARGS.variant == "ready":
        return torch.where(labeled, loss, 0).sum() / labeled.sum()
    loss = loss[labeled].mean()
    loss.item()  # LitClassifier logs loss.item(): the same host sync
    return loss


def replica(index: int) -> None:
    device = torch_xla.device()
    rank, world = xr.global_ordinal(), xr.world_size()
    with INIT_LOCK:  # the CPU RNG is shared by the replica threads
        torch.manual_seed(0)
        net = make_net()
    net = net.to(device)
    BARRIER.wait()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
    sampler = DistributedSampler(DATASET, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = pl.MpDeviceLoader(
        DataLoader(DATASET, batch_size=ARGS.batch_size, sampler=sampler), device
    )
    for epoch in range(ARGS.epochs):
        sampler.set_epoch(epoch)
        for step, (images, labels) in enumerate(loader):
            if step >= ARGS.steps:
                break
            optimizer.zero_grad()
            loss = training_step(net, images, labels)
            loss.backward()
            xm.optimizer_step(optimizer)


def main() -> None:
    from tpulint.runtime.child.xla_cpu import CpuDataParallel

    CpuDataParallel(ARGS.cores, 120.0).install()
    spawned = time.perf_counter()
    xmp.spawn(replica, start_method="fork")
    done = time.perf_counter()
    print(
        json.dumps(
            {
                "import_seconds": IMPORTED - START,
                "train_seconds": done - spawned,
                "total_seconds": done - START,
                "cores": ARGS.cores,
                "steps_per_epoch": ARGS.steps,
                "epochs": ARGS.epochs,
            }
        )
    )


if __name__ == "__main__":
    main()
