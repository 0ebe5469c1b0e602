import lightning as L
import yaml

from lab.model import Tagger

if __name__ == "__main__":
    with open("configs/tagger.yaml") as f:
        cfg = yaml.safe_load(f)
    L.Trainer(accelerator="auto", max_epochs=cfg["epochs"]).fit(Tagger(cfg))
