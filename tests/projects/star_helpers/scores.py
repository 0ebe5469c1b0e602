"""Helpers a training script takes with `from scores import *` (its `torch` and `np` too)."""

import numpy as np
import torch

# Module-level lambdas are the module's functions: what they return is what their body computes.
sq_err = lambda a, b: torch.mean((a - b) ** 2)
to_db = lambda err: -20.0 * np.log10(err)
gain_db = lambda ratio: 10.0 * torch.log10(ratio)


def heat(depth, limits=None):
    """Colours for a depth map; every caller passes a host copy."""
    if type(depth) is not np.ndarray:
        depth = depth.cpu().numpy()
    low, high = limits if limits is not None else (depth.min(), depth.max())
    return np.clip((depth - low) / (high - low + 1e-8), 0, 1)
