import lightning as L

from pkg.data import GpuCaptions
from pkg.model import CaptionModel

if __name__ == "__main__":
    trainer = L.Trainer(accelerator="gpu", devices=2, precision="16-mixed", max_epochs=3)
    trainer.fit(CaptionModel(), datamodule=GpuCaptions())
