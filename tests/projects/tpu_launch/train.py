import lightning as L
import torch_xla.runtime as xr

from textgen.data import TextData
from textgen.model import TinyLM

if __name__ == "__main__":
    print(f"training on {xr.world_size()} TPU cores")
    trainer = L.Trainer(accelerator="tpu", devices="auto", use_distributed_sampler=False)
    trainer.fit(TinyLM(), datamodule=TextData())
