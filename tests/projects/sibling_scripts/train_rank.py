import argparse

import pytorch_lightning as pl

from models import RankModel

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=1e-3)
    parser = pl.Trainer.add_argparse_args(parser)
    args = parser.parse_args()
    trainer = pl.Trainer(**vars(args))
    trainer.fit(RankModel())
