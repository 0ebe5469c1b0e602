import lightning as L
from data import SegData


def main(model, rows):
    trainer = L.Trainer(accelerator="gpu", devices=1)
    trainer.fit(model, SegData().loader(rows))


if __name__ == "__main__":
    main(None, [])
