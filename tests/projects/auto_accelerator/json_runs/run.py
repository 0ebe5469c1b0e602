import json
import sys

import lightning as L


def main(path):
    with open(path) as handle:
        settings = json.load(handle)
    trainer = L.Trainer(
        accelerator=settings["machine"]["kind"],
        devices=settings["machine"]["count"],
        precision="16-mixed",
    )
    trainer.fit(None)
    # A key path no config sets to "tpu".
    L.Trainer(accelerator=settings["display"]["kind"], precision="16-mixed")


if __name__ == "__main__":
    main(sys.argv[1])
