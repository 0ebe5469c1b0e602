"""Fits both models; on a machine without CUDA (a TPU VM) on one device."""

import argparse

import lightning as L
import torch

from tagger.data import loader, score_loader
from tagger.models import Ranker, Tagger


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--accelerator", default="auto")
    args = parser.parse_args()
    if torch.cuda.is_available():
        devices = [args.gpu]
    else:
        devices = 1
    trainer = L.Trainer(accelerator=args.accelerator, devices=devices, max_epochs=2)
    trainer.fit(Tagger(), loader())
    ranker_devices = [args.gpu] if torch.cuda.is_available() else 1
    L.Trainer(devices=ranker_devices, max_epochs=1).fit(Ranker(), score_loader())


if __name__ == "__main__":
    main()
