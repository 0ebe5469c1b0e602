import lightning as L
from src.models.classifier import Classifier


def main():
    trainer = L.Trainer(accelerator="tpu", devices=8, max_epochs=1)
    trainer.fit(Classifier())


if __name__ == "__main__":
    main()
