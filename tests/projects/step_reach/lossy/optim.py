import torch


class ClippedSignSGD(torch.optim.Optimizer):
    """Sign descent that skips parameters whose gradient blew up."""

    def __init__(self, params, lr=1e-3, limit=1e3):
        super().__init__(params, dict(lr=lr, limit=limit))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None or p.grad.abs().max().item() > group["limit"]:
                    continue
                p.add_(p.grad.sign(), alpha=-group["lr"])
