import lightning as L

from shop.data import loader
from shop.model import ShopModel


def run(ckpt):
    model = ShopModel.load_from_checkpoint(ckpt)
    trainer = L.Trainer()
    trainer.test(model, loader())


if __name__ == "__main__":
    run("last.ckpt")
