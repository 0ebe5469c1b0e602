def spread(points):
    # reached from the sampler (periodic) and from the loss (every step): every step
    scale = points.std().item()
    return max(scale, 1e-6)


def coverage(shapes):
    filled = [s[s.norm(dim=-1) < 1.0] for s in shapes]
    return sum(f.shape[0] for f in filled) / max(len(shapes), 1)
