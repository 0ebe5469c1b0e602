"""A TPU-ready module whose steps are slow on this machine (it sleeps in training_step, as a
large model computes): slow is not hung. With a small --timeout the cores keep stepping when
time runs out, and verify says so with the time per step."""

import time

from clean import CleanModel

SECONDS_PER_STEP = 2.0


class SlowModel(CleanModel):
    def training_step(self, batch, batch_idx):
        time.sleep(SECONDS_PER_STEP)
        return super().training_step(batch, batch_idx)
