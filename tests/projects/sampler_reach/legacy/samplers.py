"""The samplers of an older DDP training loop of its own (no Lightning imports them)."""

import torch.distributed as dist
from torch.utils.data import Sampler


class ShardSampler(Sampler):
    def __init__(self, size):
        self.size = size
        self.rank = dist.get_rank()
        self.replicas = dist.get_world_size()

    def __iter__(self):
        return iter(range(self.rank, self.size, self.replicas))
