import hydra
import lightning as L
from hydra.utils import instantiate

from zoo import activations
from zoo.system import System


@hydra.main(config_path="configs", config_name="run")
def main(cfg):
    backbone = instantiate(cfg.backbone)
    act = getattr(activations, cfg.activation)()
    L.Trainer(accelerator="auto").fit(System(backbone, act, cfg.head, cfg.optimizer))


if __name__ == "__main__":
    main()
