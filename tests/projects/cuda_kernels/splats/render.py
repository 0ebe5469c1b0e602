import torch
from torch import nn


class Blend(torch.autograd.Function):
    @staticmethod
    def forward(ctx, alpha, owner, count):
        from splats.kernels import raster_cuda

        weights, last = raster_cuda.blend(alpha, owner, count)
        ctx.save_for_backward(weights)
        return weights, last

    @staticmethod
    def backward(ctx, grad_weights, grad_last):
        (weights,) = ctx.saved_tensors
        return grad_weights * weights, None, None


def keep_visible(points, weights):
    # only the rasteriser calls this
    return points[weights > 1e-4]


class Rasteriser(nn.Module):
    def __init__(self, count=4096):
        super().__init__()
        self.means = nn.Parameter(torch.randn(count, 3))
        self.opacity = nn.Parameter(torch.zeros(count))

    def project(self, rays):
        from splats.kernels import raster_cuda

        hits, owner = raster_cuda.intersect(self.means, rays)
        return hits[owner >= 0], owner[owner >= 0]

    def forward(self, rays):
        hits, owner = self.project(rays)
        alpha = torch.sigmoid(self.opacity)[owner]
        weights, last = Blend.apply(alpha, owner, len(rays))
        return keep_visible(hits, weights), last


class SurfelGrid(nn.Module):
    """The fused path asserts CUDA; `lookup` has a pure-PyTorch fallback."""

    def __init__(self, size=64):
        super().__init__()
        self.values = nn.Parameter(torch.zeros(size**3, 4))

    def lookup(self, index):
        if index.is_cuda:
            from splats.kernels import raster_cuda

            return raster_cuda.gather(self.values, index)
        found = index >= 0
        out = torch.zeros(len(index), 4, device=index.device)
        out[found] = self.values[index[found]]
        return out

    def fused_step(self, index, lr):
        assert index.is_cuda, "the fused update needs the CUDA kernels"
        touched = index[index >= 0]
        self.values.data[touched] -= lr * self.values.grad[touched]
