import lightning as L
from torch.utils.data import DataLoader

from pkg.data import BucketSampler, LengthSet


class LengthDataModule(L.LightningDataModule):
    def setup(self, stage):
        self.train_set = LengthSet([3, 5, 8, 13] * 64)

    def train_dataloader(self):
        sampler = BucketSampler(self.train_set.lengths)
        return DataLoader(
            self.train_set, batch_size=16, sampler=sampler, drop_last=True, num_workers=4
        )
