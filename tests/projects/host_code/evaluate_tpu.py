import lightning as L
import torch

from speech.model import Recognizer


def transcribe(model, feats):
    hidden = model.encoder(feats, None, stream_for_inference=True)
    return model.head(hidden).argmax(-1)


if __name__ == "__main__":
    model = Recognizer.load_from_checkpoint("last.ckpt")
    L.Trainer(accelerator="tpu", devices=8, max_epochs=0).test(model)
    print(transcribe(model, torch.zeros(1, 100, 80)))
