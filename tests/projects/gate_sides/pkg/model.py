import lightning as L
import torch

from pkg.probes import low_of, mean_of, norm_of, peak, spread_of


class GatedModel(L.LightningModule):
    def __init__(self, log_every: int = 200, debug: bool = False, verbose: int = 0):
        super().__init__()
        self.net = torch.nn.Linear(4, 4)
        self.log_every = log_every
        self.debug = debug
        self.verbose = verbose
        self.history = []

    def forward(self, x):
        return self.net(x)

    def _clip(self, x):
        if self.verbose and x.device.type == "cuda":
            return x.clamp(min=0)
        else:
            # the else of a device test is the path taken on a TPU: reported
            x[x < 0] = 0.0
            return x

    def _show(self, x):
        return x.sum().item()

    def training_step(self, batch, batch_idx):
        out = self._clip(self(batch))
        if batch_idx != 0:
            self.log("norm", norm_of(out))  # every batch but the first
        else:
            self.log("mean", mean_of(out))  # the first batch only
        if not self.debug:
            self.history.append(out[0, 0].item())  # the common path
        else:
            self.history.append(out[-1, -1].item())  # debugging only
        self.history.append(out.max().item() if self.verbose else low_of(out))
        if self.global_step % self.log_every == 0:
            return self._show(out)
        # every step but one in `log_every`
        self.log("peak", peak(out))
        self.history.append(out.amax().item())
        return out.pow(2).mean()

    def validation_step(self, batch, batch_idx):
        out = self(batch)
        if batch_idx % self.log_every != 0 and not self.debug:
            return out.pow(2).mean()
        # one batch in `log_every`, or debugging: rare
        self.log("spread", spread_of(out))
        self.history.append(out.amax().item())
        return out.pow(2).mean()
