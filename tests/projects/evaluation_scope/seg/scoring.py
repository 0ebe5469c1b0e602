import torch


def iou(pred, target):
    inter = (pred & target).sum()
    return inter / (pred | target).sum().clamp(min=1)


def export_instances(masks, scores):
    """Write each kept instance to disk: the evaluation output of a test run."""
    kept = masks[scores > 0.5]
    for i, mask in enumerate(kept.cpu().numpy()):
        torch.save(mask, f"instance_{i}.pt")
    return int(scores.max().item())


class OracleBaseline:
    """An upper bound from the ground truth, scored only in the test run."""

    def __call__(self, target):
        return target.nonzero().float().mean().item()
