"""Trains LitClassifier on a TPU VM (`python train.py` from this folder)."""

import lightning as L

from model import LitClassifier

if __name__ == "__main__":
    trainer = L.Trainer(tpu_cores=8, max_epochs=2)
    trainer.fit(LitClassifier())
