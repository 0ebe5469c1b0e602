import lightning as L
import torch


class Points(L.LightningDataModule):
    def train_dataloader(self):
        data = torch.utils.data.TensorDataset(torch.randn(64, 16), torch.randn(64, 1))
        return torch.utils.data.DataLoader(data, batch_size=8, drop_last=True)

    test_dataloader = train_dataloader
