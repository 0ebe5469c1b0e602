import torch


class ClippedReLU(torch.nn.Module):
    """Looked up by name on the module (`getattr(activations, cfg.activation)`)."""

    def forward(self, x):
        if x.min() < 0:
            x = x.clamp(min=0)
        return x
