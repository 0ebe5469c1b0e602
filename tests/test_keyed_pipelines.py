"""Keyed pipelines (ProjectModel.keyed_entry_kind): torch modules built with key literals
(`Drop(key_in="ids", key_out="ids")`) that pass one dict along, each writing its result at its
output key. What a module reads at `batch[self.key_in]` is what the pipeline's modules write at
that key: a text field's `process(texts)` with no device makes a CPU tensor inside forward, and
the augmentations that run on it before an embedding moves it to the device work on the host.
Made-up fixtures of the shape; the controls keep a device key, an unknown writer, a device
argument and a construction the model cannot see."""

from __future__ import annotations

import textwrap

import pytest

from tpulint.config.settings import Config
from tpulint.engine.source import check_source

PIPELINE = """
import lightning as L
import numpy as np
import torch
import torchtext
from torch import nn


class TextToIds(nn.Module):
    def __init__(self, texts, key_in, key_out):
        super().__init__()
        self.field = torchtext.data.Field(batch_first=True, fix_length=64)
        self.field.build_vocab(texts)
        self.key_in = key_in
        self.key_out = key_out

    def forward(self, batch_dict: dict) -> dict:
        batch_dict[self.key_out] = ENCODE
        return batch_dict


class Scramble(nn.Module):
    def __init__(self, key_in, key_out, values=(1, 2, 3)):
        super().__init__()
        self.key_in = key_in
        self.key_out = key_out
        self.values = values

    def forward(self, batch_dict: dict) -> dict:
        x = batch_dict[self.key_in]
        data = x.clone().detach()
        mask = torch.from_numpy(np.random.rand(*data.shape) < 0.1).to(x.device)
        if mask.sum() > 0:
            data[mask] = torch.from_numpy(np.random.choice(self.values, int(mask.sum())))
        batch_dict[self.key_out] = data
        return batch_dict


class Lookup(nn.Module):
    def __init__(self, key_in, key_out):
        super().__init__()
        self.table = nn.Embedding(100, 8)
        self.key_in = key_in
        self.key_out = key_out

    def forward(self, batch_dict: dict) -> dict:
        ids = batch_dict[self.key_in].to(self.table.weight.device)
        batch_dict[self.key_out] = self.table(ids)
        return batch_dict


class Smear(nn.Module):
    def __init__(self, key_in, key_out):
        super().__init__()
        self.key_in = key_in
        self.key_out = key_out

    def forward(self, batch_dict: dict) -> dict:
        x = batch_dict[self.key_in]
        data = x.clone()
        keep = torch.from_numpy(np.random.rand(*data.shape[:2]) < 0.5).to(x.device)
        if keep.sum() > 0:
            data[keep] = 0.0
        batch_dict[self.key_out] = data
        return batch_dict


def build(texts):
    return nn.Sequential(
        TextToIds(texts, "text", "ids"),
        Scramble(key_in="ids", key_out="ids_aug"),
        Scramble(key_in="ids_aug", key_out="ids_aug"),
        Lookup("ids_aug", "emb"),
        Smear(key_in=SMEAR_KEY, key_out="emb_aug"),
    )


class Net(L.LightningModule):
    def __init__(self, texts):
        super().__init__()
        self.pipe = build(texts)
        EXTRA

    def training_step(self, batch, batch_idx):
        return self.pipe(batch)["emb_aug"].sum()
"""

ENCODE = "self.field.process(batch_dict[self.key_in])"
# Smear on the embeddings: a device tensor, its mask on the device.
SMEAR = [("TPU104", 61)]
SCRAMBLE = [("TPU103", 33), ("TPU104", 32), ("TPU202", 33)]


def codes(
    encode: str = ENCODE, smear_key: str = '"emb"', extra: str = "", tail: str = ""
) -> list[tuple[str, int]]:
    source = (
        PIPELINE.replace("ENCODE", encode).replace("SMEAR_KEY", smear_key).replace("EXTRA", extra)
        + tail
    )
    config = Config.from_mapping({"select": ["TPU1", "TPU2"]})
    found = check_source(textwrap.dedent(source).lstrip("\n"), "model.py", config)
    return sorted((d.code, d.start.line) for d in found)


def test_augmentations_of_host_made_ids_stay_silent() -> None:
    # The ids come from the text field on the host; the embedding moves them to the device
    # after the augmentations: only the embeddings' mask is a device one.
    assert codes() == SMEAR


@pytest.mark.parametrize(
    "encode",
    [
        # A tokenizer the model knows nothing of: what it returns is not known to be host.
        "self.vocab_encode(batch_dict[self.key_in])",
        # A field given a device makes its tensor there.
        "self.field.process(batch_dict[self.key_in], device=self.where)",
        # The text entry itself, a batch entry (on the device, as presumed).
        "batch_dict[self.key_in]",
    ],
)
def test_ids_not_known_to_be_host_made_stay_reported(encode: str) -> None:
    assert codes(encode=encode) == sorted(SMEAR + SCRAMBLE)


def test_a_batch_key_no_module_writes_stays_reported() -> None:
    # Scramble also runs on the step's own "tokens", rewritten in place (device tensors, as
    # presumed): its forward's findings stay.
    tail = '\n\ndef build_more():\n    return Scramble(key_in="tokens", key_out="tokens")\n'
    assert codes(tail=tail) == sorted(SMEAR + SCRAMBLE)


def test_a_construction_the_model_cannot_see_stays_reported() -> None:
    # Built in an `__init__` (whose calls the model does not follow) with a key of a config.
    extra = "self.more = Scramble(key_in=texts.key, key_out='ids')"
    assert codes(extra=extra) == sorted(SMEAR + SCRAMBLE)


def test_a_module_built_on_device_keys_too_stays_reported() -> None:
    # Scramble also built on the embeddings: its forward runs on device tensors there.
    tail = '\n\ndef build_more():\n    return Scramble(key_in="emb", key_out="emb_more")\n'
    assert codes(tail=tail) == sorted(SMEAR + SCRAMBLE)


def test_a_module_built_on_host_keys_only_is_silent() -> None:
    # Smear built on the ids instead of the embeddings: host tensors there too.
    assert codes(smear_key='"ids"') == []
