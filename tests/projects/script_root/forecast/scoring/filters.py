def observed_only(pred, target, observed):
    keep = observed.any(dim=-1)
    return pred[keep], target[keep]
