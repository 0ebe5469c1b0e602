import lightning as L
import torch

from pkg.sampling import draw_sizes, generate, render
from pkg.stats import coverage, spread


class PointFlow(L.LightningModule):
    def __init__(self, eval_every: float = 0.25, render_every: int = 500):
        super().__init__()
        self.net = torch.nn.Linear(3, 3)
        self.eval_every = eval_every
        self.render_every = render_every
        self.last_eval_mark = 0.0
        self.register_buffer("size_counts", torch.arange(8, 64))

    def forward(self, points):
        return self.net(points)

    def sample(self, n):
        return generate(self, draw_sizes(self.size_counts, n))

    def training_step(self, batch, batch_idx):
        progress = self.current_epoch + batch_idx / self.trainer.num_training_batches
        # Once every `eval_every` epochs: the marker moves when the block runs.
        if progress - self.last_eval_mark >= self.eval_every:
            self.last_eval_mark = progress
            self.log("coverage", coverage(self.sample(32)))
        if self.global_step % self.render_every == 0:
            self.logger.experiment.add_image("render", render(self, batch[:1]), self.global_step)
        loss = (self(batch) - batch).pow(2).mean() / spread(batch)
        self.log("loss", loss)
        return loss
