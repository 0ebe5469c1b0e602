import sys

import hydra
import lightning as L
from omegaconf import OmegaConf

from shapes.atoms import AtomModel
from shapes.residues import ResidueModel

if __name__ == "__main__":
    block = hydra.utils.instantiate(OmegaConf.load("configs/block.yaml"))
    model = ResidueModel(block) if "--residues" in sys.argv else AtomModel()
    L.Trainer(accelerator="tpu", devices="auto", max_epochs=10).fit(model)
