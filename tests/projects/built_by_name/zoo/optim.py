import importlib

import torch

# Built from a dotted name in a string.
OPTIMIZERS = {"sgd": "torch.optim.SGD", "clipped": "zoo.optim.ClippedSGD"}


class ClippedSGD(torch.optim.SGD):
    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None and p.grad.norm() > 1.0:
                    p.grad.mul_(0.5)
        return super().step(closure)


def build_optimizer(name, params):
    module, _, cls = OPTIMIZERS[name].rpartition(".")
    return getattr(importlib.import_module(module), cls)(params, lr=0.1)
