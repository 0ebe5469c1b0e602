"""Fits the ranker on as many devices as the command line asks for."""

import argparse

import lightning as L

from tagger.data import score_loader
from tagger.models import Ranker

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--devices", type=int, default=1)
    args = parser.parse_args()
    L.Trainer(accelerator="tpu", devices=args.devices).fit(Ranker(), score_loader())
