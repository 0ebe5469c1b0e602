"""Host-side scoring helpers."""

import torch


def confusion(pred, gold):
    known = gold >= 0
    pred, gold = pred[known], gold[known]
    pairs = torch.stack([pred.long(), gold.long()])
    table = torch.zeros(2, 2)
    return table.index_put_(tuple(pairs), torch.ones(pairs.shape[1]), accumulate=True)


def positives(scores):
    picked = scores[scores > 0]
    return picked.sum() / scores.numel()


def flat(rows):
    return rows.cpu().flatten()
