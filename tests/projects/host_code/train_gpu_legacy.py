import pytorch_lightning as pl

from speech.model import Recognizer
from speech.profiling import PeakMemory

if __name__ == "__main__":
    trainer = pl.Trainer(
        gpus=[0], distributed_backend="ddp", amp_level="O2", callbacks=[PeakMemory()]
    )
    trainer.fit(Recognizer())
