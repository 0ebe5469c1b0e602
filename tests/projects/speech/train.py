import lightning as L

from speech import SpeechModel

if __name__ == "__main__":
    trainer = L.Trainer(accelerator="tpu", devices="auto", max_epochs=10)
    trainer.fit(SpeechModel())
