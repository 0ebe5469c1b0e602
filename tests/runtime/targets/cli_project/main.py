"""The user's launcher: `python main.py fit --config base.yaml --config ...`."""

from lightning.pytorch.cli import LightningCLI

if __name__ == "__main__":
    LightningCLI()
