"""Train a segmenter, or (with --test) score a checkpoint: two runs, never both."""

import argparse

import lightning as L

from seg.data import SceneData
from seg.model import Segmenter


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--test", action="store_true")
    parser.add_argument("--ckpt", default=None)
    args = parser.parse_args()
    trainer = L.Trainer(accelerator="auto", max_epochs=10)
    if args.test:
        trainer.test(Segmenter.load_from_checkpoint(args.ckpt), datamodule=SceneData())
    else:
        trainer.fit(Segmenter(), datamodule=SceneData())


if __name__ == "__main__":
    main()
