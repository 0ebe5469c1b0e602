import lightning as L

from speech import SpeechModel
from speech.callbacks import GradNormMonitor

if __name__ == "__main__":
    trainer = L.Trainer(
        accelerator="tpu", devices="auto", max_epochs=10, callbacks=[GradNormMonitor()]
    )
    trainer.fit(SpeechModel())
