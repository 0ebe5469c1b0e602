import sys

import lightning as L

from shapes.atoms import AtomModel
from shapes.residues import ResidueModel

if __name__ == "__main__":
    model = ResidueModel() if "--residues" in sys.argv else AtomModel()
    L.Trainer(accelerator="tpu", devices="auto", max_epochs=10).fit(model)
