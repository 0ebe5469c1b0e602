import lightning as L
from torch.utils.data import DataLoader

from hits.data import EventDataset
from hits.graphs import CloseHits, HitGraph, NearestHits, Voxels
from hits.model import EventModel, EventNet

if __name__ == "__main__":
    graph = HitGraph(NearestHits(8)) if __debug__ else HitGraph(CloseHits(0.5))
    voxels = Voxels()
    data = EventDataset(["events.npy"], graph, voxels)
    model = EventModel(EventNet(voxels), graph)
    trainer = L.Trainer(accelerator="tpu", devices="auto")
    trainer.fit(model, DataLoader(data, batch_size=None, num_workers=4))
