def peak(x):
    # called after an early exit on the rare side: every step but one in N
    return x.abs().max().item()


def mean_of(x):
    # called in the else of a rare test: rare
    return x.mean().item()


def norm_of(x):
    # called in the body of `if batch_idx != 0:`: every batch but the first
    return x.norm().item()


def spread_of(x):
    # called after an early exit on the common side: rare
    return x.std().item()


def low_of(x):
    # called where `self.verbose` is false (the else of a ternary): every step
    return x.min().item()
