import lightning as L

from splats import kernels
from splats.model import SplatModule, SurfelModule

if __name__ == "__main__":
    kernels.init()
    trainer = L.Trainer(accelerator="auto", max_steps=1000)
    trainer.fit(SplatModule())
    trainer.fit(SurfelModule())
