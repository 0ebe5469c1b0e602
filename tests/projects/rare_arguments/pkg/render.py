import torch


def label_blobs(scores, threshold=0.5):
    # reached only from the debug dumps: host work once in a while, not every step
    labels = torch.zeros_like(scores, dtype=torch.long)
    keep = scores > threshold
    next_id = 1
    while keep.any():
        seed = scores.masked_fill(~keep, -1).argmax().item()
        labels.view(-1)[seed] = next_id
        keep.view(-1)[seed] = False
        next_id += 1
    return labels[labels > 0]


def overlay(image, scores):
    # reached from a dump that one step runs on every batch: every step
    top = scores.max().item()
    return (image * scores / top).cpu().numpy()
