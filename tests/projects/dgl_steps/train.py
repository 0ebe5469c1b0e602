import lightning as L

from molgraph.model import BondModel, PairModel, SiteModel

if __name__ == "__main__":
    trainer = L.Trainer(accelerator="auto", max_epochs=20)
    trainer.fit(PairModel())
    trainer.fit(SiteModel())
    trainer.fit(BondModel())
