import hydra
from omegaconf import DictConfig

from lab.run import run


@hydra.main(version_base="1.3", config_path="configs", config_name="config.yaml")
def main(cfg: DictConfig) -> None:
    run(cfg, hydra.utils.instantiate(cfg.data))


if __name__ == "__main__":
    main()
