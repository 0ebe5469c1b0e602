"""`python main.py fit --config config.yaml` (on a TPU VM: `--trainer.accelerator tpu`)."""

from lightning.pytorch.cli import LightningCLI

if __name__ == "__main__":
    LightningCLI()
