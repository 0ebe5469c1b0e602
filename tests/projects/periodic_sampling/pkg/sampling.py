import torch

from pkg.stats import spread


def draw_sizes(counts, n):
    return counts[torch.randint(0, counts.numel(), (n,), device=counts.device)]


def generate(net, sizes):
    shapes = []
    for size in torch.unique(sizes):
        points = torch.randn(int(size), 3, device=sizes.device)
        shapes.append(net(points) / spread(points))
    return [s.cpu() for s in shapes]


def render(net, points):
    image = net(points).clamp(0, 1)
    return image.cpu().numpy()
