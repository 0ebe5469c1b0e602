"""What numpy-producing image and volume libraries return is a host array, never a device
tensor (value_tables.NUMPY_ROOTS): a boolean-mask write or a host read on it is no TPU sync,
even when the function is given a tensor."""

from __future__ import annotations

import textwrap

import pytest

from tpulint.config.settings import Config
from tpulint.engine.source import check_source

SOURCE = """\
import lightning as L
import numpy as np
import torch
{imports}


def decode(pred):
    labels = {call}
    labels[labels == 3] = 0
    return int((labels > 2).sum())


class Model(L.LightningModule):
    def training_step(self, batch, batch_idx):
        x = self(batch)
        decode(x)
        return x.sum()
"""


def codes(imports: str, call: str) -> list[str]:
    source = SOURCE.format(imports=imports, call=call)
    config = Config.from_mapping({"select": ["TPU101", "TPU103", "TPU202"]})
    return [d.code for d in check_source(textwrap.dedent(source), "m.py", config)]


@pytest.mark.parametrize(
    ("imports", "call"),
    [
        ("import mahotas", "mahotas.label(pred > 0.5)[0]"),
        ("import cc3d", "cc3d.connected_components(pred > 0.5)"),
        ("from skimage.segmentation import watershed", "watershed(-pred, pred > 0.5)"),
        ("import skimage.measure", "skimage.measure.label(pred > 0.5)"),
        ("import fastremap", "fastremap.renumber(pred)[0]"),
        ("from scipy import ndimage", "ndimage.label(pred > 0.5)[0]"),
    ],
)
def test_what_a_numpy_library_returns_is_a_host_array(imports: str, call: str) -> None:
    assert codes(imports, call) == []


def test_a_tensor_function_of_the_same_shape_still_reports() -> None:
    assert "TPU202" in codes("", "torch.round(pred)")
