import lightning as L
from torch.utils.data import DataLoader


class SegData(L.LightningDataModule):
    def __init__(self, images, batch_size=16):
        super().__init__()
        self.images = images
        self.batch_size = batch_size

    def train_dataloader(self):
        return DataLoader(self.images, batch_size=self.batch_size, shuffle=True)
