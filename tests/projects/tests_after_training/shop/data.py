import torch


def loader():
    data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
    return torch.utils.data.DataLoader(data, batch_size=8, drop_last=True, num_workers=4)
