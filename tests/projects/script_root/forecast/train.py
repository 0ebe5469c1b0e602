import lightning as L

from nets.model import Forecaster

if __name__ == "__main__":
    L.Trainer(accelerator="tpu", max_epochs=3).fit(Forecaster())
