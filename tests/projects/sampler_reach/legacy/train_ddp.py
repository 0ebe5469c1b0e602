import torch.distributed as dist
from torch.utils.data import DataLoader

from legacy.samplers import ShardSampler


def main(dataset):
    dist.init_process_group("nccl")
    loader = DataLoader(dataset, batch_size=16, sampler=ShardSampler(len(dataset)))
    for batch in loader:
        print(batch)
