import argparse

import lightning as L

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)

if __name__ == "__main__":
    args = parser.parse_args()
    trainer = L.Trainer(accelerator="auto", max_epochs=args.epochs, precision="bf16-mixed")
    trainer.fit(None)
