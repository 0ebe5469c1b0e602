import lightning as L

from crystals.model import CrystalModel

if __name__ == "__main__":
    L.Trainer(accelerator="tpu", devices="auto", max_epochs=10).fit(CrystalModel())
