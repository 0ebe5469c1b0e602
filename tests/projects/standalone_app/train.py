import lightning as L
import torch_xla.core.xla_model as xm

from app.model import Ranker

if __name__ == "__main__":
    print("training from", xm.xla_device())
    L.Trainer(accelerator="tpu", devices="auto").fit(Ranker())
