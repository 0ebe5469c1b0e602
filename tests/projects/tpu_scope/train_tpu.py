import lightning as L

from pkg.data import TpuCaptions
from pkg.model import CaptionModel


def make_trainer():
    return L.Trainer(accelerator="tpu", devices="auto", precision="bf16-true", max_epochs=3)


def main():
    make_trainer().fit(CaptionModel(), datamodule=TpuCaptions())


if __name__ == "__main__":
    main()
