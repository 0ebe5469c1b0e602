import torch


class SparseLamb(torch.optim.Optimizer):
    """A trust-ratio optimizer that skips rows without gradient."""

    def __init__(self, params, lr=1e-3):
        super().__init__(params, {"lr": lr, "sparse": True})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                rows = p.grad.abs().sum(dim=-1) > 0
                partial = group["sparse"] and not rows.all()
                w_norm = p.norm()
                g_norm = p.grad.norm()
                ratio = 1.0
                if w_norm > 0 and g_norm > 0:
                    ratio = w_norm / g_norm
                if partial:
                    p.add_(p.grad * rows[:, None], alpha=-group["lr"] * ratio)
                else:
                    p.add_(p.grad, alpha=-group["lr"] * ratio)
