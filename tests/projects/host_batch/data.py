"""Data loading: a dict batch with host metadata, and a tuple batch whose scene record is a
plain object (no `.to`), which Lightning's batch transfer leaves on the host."""

import torch
from torch.utils.data import DataLoader, Dataset


class Scene:
    """Full-resolution extras kept off the accelerator."""

    def __init__(self, points, regions, names):
        self.points = points
        self.regions = regions
        self.names = names


class Packed:
    """A record with `.to`: Lightning's batch transfer moves it with the batch."""

    def __init__(self, nodes):
        self.nodes = nodes

    def to(self, device):
        self.nodes = self.nodes.to(device)
        return self


class Clips(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        return {"audio": torch.randn(16), "label": index % 3}

    def collater(self, samples):
        return {
            "n_clips": len(samples),
            "audio": torch.stack([s["audio"] for s in samples]),
            "label": torch.tensor([s["label"] for s in samples]),
        }


class Views(Dataset):
    """Items with an `index`: a validation loader's default_collate stacks it into a tensor,
    while the training loader's collate keeps it a Python int."""

    def __len__(self):
        return 32

    def __getitem__(self, index):
        return {"index": index, "rays": torch.randn(8)}


def views_collate(samples):
    return {"index": len(samples) - 1, "rays": torch.stack([s["rays"] for s in samples])}


def view_loaders():
    data = Views()
    return DataLoader(data, collate_fn=views_collate), DataLoader(data, batch_size=1)


def scene_collate(samples):
    points = torch.stack([s[0] for s in samples])
    scene = Scene(points, [s[1] for s in samples], [str(i) for i in range(len(samples))])
    return points.clone(), scene, Packed(points.sum(-1))


def clip_loader():
    data = Clips()
    return DataLoader(data, batch_size=8, collate_fn=data.collater)


def scene_loader(scenes):
    return DataLoader(scenes, batch_size=4, collate_fn=scene_collate)
