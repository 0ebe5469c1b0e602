"""A length-bucketing sampler written for DDP: it asks torch.distributed for its shard."""

import torch.distributed as dist
from torch.utils.data import Sampler


class BucketSampler(Sampler):
    def __init__(self, lengths, bucket=64, replicas=None, rank=None):
        if replicas is None:
            replicas = dist.get_world_size()
        if rank is None:
            rank = dist.get_rank()
        self.lengths, self.bucket = lengths, bucket
        self.replicas, self.rank = replicas, rank

    def __iter__(self):
        order = sorted(range(len(self.lengths)), key=self.lengths.__getitem__)
        return iter(order[self.rank :: self.replicas])

    def __len__(self):
        return len(self.lengths) // self.replicas
