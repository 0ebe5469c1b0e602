import lightning as L
from omegaconf import DictConfig

from lab.module import Regressor


def run(cfg: DictConfig, data) -> dict:
    model = Regressor(cfg.width)
    trainer = L.Trainer(accelerator="tpu", max_epochs=cfg.epochs)
    if cfg.get("train"):
        trainer.fit(model=model, datamodule=data)
    if cfg.get("test"):
        trainer.test(model=model, datamodule=data)
    return dict(trainer.callback_metrics)
