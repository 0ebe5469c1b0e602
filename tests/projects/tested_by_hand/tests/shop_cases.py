import lightning as L
import torch

from shop.data import loader
from shop.evaluate import run
from shop.model import ShopModel
from shop.window import Window


def test_window_keeps_confident_scores():
    window = Window(2)
    for value in (0.9, 0.1, 0.8):
        window.push(torch.tensor([value, 1 - value]))
    assert len(window.items) == 2


def test_fit_then_test(tmp_path):
    trainer = L.Trainer(accelerator="cpu", max_steps=1)
    trainer.fit(ShopModel(), loader())
    trainer.save_checkpoint(tmp_path / "last.ckpt")
    run(tmp_path / "last.ckpt")
    trainer.test(ShopModel(), loader())
