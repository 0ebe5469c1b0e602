import torch
import torchmetrics


class TokenErrorRate(torchmetrics.Metric):
    def __init__(self):
        super().__init__()
        self.add_state("errors", default=torch.tensor(0), dist_reduce_fx="sum")
        self.add_state("total", default=torch.tensor(0), dist_reduce_fx="sum")

    def update(self, preds, target, lengths):
        for pred, ref, n in zip(preds, target, lengths.tolist()):
            self.errors += int((pred[:n] != ref[:n]).sum())
            self.total += n

    def compute(self):
        return self.errors.float() / self.total.item()
