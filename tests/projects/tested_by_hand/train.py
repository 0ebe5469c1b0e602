import lightning as L

from shop.data import loader
from shop.model import ShopModel

if __name__ == "__main__":
    trainer = L.Trainer(max_epochs=3)
    trainer.fit(ShopModel(), loader())
    trainer.save_checkpoint("last.ckpt")
