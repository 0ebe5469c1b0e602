import torch.nn.functional as F
from torch_scatter import scatter


def per_graph_mse(pred, target, owner, num_graphs=None):
    """Mean squared error per graph, averaged over graphs."""
    per_node = F.mse_loss(pred, target, reduction="none").sum(-1)
    return scatter(per_node, owner, dim=0, reduce="mean", dim_size=num_graphs).mean()


def per_graph_type_loss(logits, types, owner):
    per_node = F.cross_entropy(logits, types, reduction="none")
    return scatter(per_node, owner, dim=0, reduce="mean").mean()
