import lightning as L

from lossy.model import LossHistory, Tagger

if __name__ == "__main__":
    trainer = L.Trainer(accelerator="tpu", devices="auto", callbacks=[LossHistory()])
    trainer.fit(Tagger())
