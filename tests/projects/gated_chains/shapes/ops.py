import torch
from typeguard import typechecked


@typechecked
def center(points, mask=None):
    # The masked branch runs only for callers that pass a mask: its findings name the chain
    # through such a caller (residues.py), not the first caller found (atoms.py, no mask).
    if mask is not None:
        kept = points[mask]
        return points - kept.mean(0)
    # The unmasked branch runs for atoms.py: named by the first chain, as before.
    scale = points.abs().max().item()
    return points / scale


def pool(h, mask=None):
    # Both callers pass a mask: the first chain found (atoms.py) reaches the masked code.
    if mask is None:
        return h.mean(0)
    return h[mask].mean(0)


def trim(h, mask=None):
    # No caller passes a mask: the masked code never runs, nothing to report.
    if mask is not None:
        h = h[mask]
    return h


def spread(h, mask=None):
    # Undecorated, after an early exit: atoms.py leaves the mask out, residues.py passes one.
    if mask is None:
        return h.std(0)
    return h[mask].std(0)


def squash(h):
    return h / h.norm().item()
