"""Lightning's BoringModel trained by its own script, with TPUReadiness recording the run:

    python boring.py --record DIR [--masked]

`--masked` trains with a boolean-mask loss instead (`out[out > 0].sum()`): a data-dependent
shape, every new count of positive outputs a new XLA graph."""

import argparse

import lightning as L
from lightning.pytorch.demos.boring_classes import BoringModel

from tpulint.lightning import TPUReadiness


class MaskedBoringModel(BoringModel):
    def training_step(self, batch, batch_idx):
        out = self(batch)
        loss = out[out > 0].sum()
        return {"loss": loss}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", required=True)
    parser.add_argument("--masked", action="store_true")
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    model = MaskedBoringModel() if args.masked else BoringModel()
    trainer = L.Trainer(
        accelerator="tpu",
        max_epochs=args.epochs,
        callbacks=[TPUReadiness(args.record)],
    )
    trainer.fit(model)


if __name__ == "__main__":
    main()
