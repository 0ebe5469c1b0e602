import lightning as L

try:  # optional TPU support: the project does not need torch_xla
    import torch_xla.core.xla_model as xm
except ImportError:
    xm = None


def run(model, loader):
    trainer = L.Trainer(precision="16-mixed", max_epochs=3)
    trainer.fit(model, loader)


if __name__ == "__main__":
    run(None, None)
