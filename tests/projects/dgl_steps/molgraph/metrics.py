import torch


def top_k_hits(scores, labels, k):
    order = torch.argsort(scores, descending=True)
    return labels[order[:k]].sum().item() / k
