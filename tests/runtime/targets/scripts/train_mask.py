"""A user's training script around the boolean-mask module (argparse, its own Trainer):

python train_mask.py --epochs 3 --lr 0.1
"""

import argparse
import os
import sys

import lightning as L

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from boolean_mask import MaskedLossModel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    trainer = L.Trainer(accelerator="tpu", devices="auto", max_epochs=args.epochs)
    trainer.fit(MaskedLossModel())


if __name__ == "__main__":
    main()
