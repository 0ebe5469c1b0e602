import lightning as L
from torch.utils.data import DataLoader

from speech.data import Utterances
from speech.model import Recognizer

if __name__ == "__main__":
    loader = DataLoader(Utterances([]), batch_size=32, drop_last=True)
    L.Trainer(accelerator="tpu", devices=8).fit(Recognizer(), loader)
