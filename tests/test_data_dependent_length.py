"""`len()` of a result whose size follows the data, used as a size: one finding (TPU201 at
the op), not one per rule that sees the length, and not none."""

from __future__ import annotations

import pytest

from tpulint.config.settings import Config
from tpulint.engine.source import check_source

_SOURCE = (
    "import lightning as L\nimport torch\nfrom torch import nn\n\n\n"
    "class Readout(nn.Module):\n"
    "    def forward(self, h, graph_id):\n"
    "        num_graphs = {length}\n"
    "        out = torch.zeros(num_graphs, h.size(1), device=h.device)\n"
    "        return out.index_add(0, graph_id, h)\n\n\n"
    "class Model(L.LightningModule):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.readout = Readout()\n\n"
    "    def training_step(self, batch, batch_idx):\n"
    "        return self.readout(batch.h, batch.graph_id).sum()\n"
)


@pytest.mark.parametrize(
    "length",
    ["len(graph_id.unique())", "len(torch.nonzero(graph_id >= 0))", "graph_id.unique().shape[0]"],
)
def test_the_length_of_a_data_dependent_result_as_a_size_is_reported_once(length: str) -> None:
    config = Config.from_mapping({"select": ["TPU1", "TPU2"]})
    source = _SOURCE.replace("{length}", length)
    found = [(d.code, d.start.line) for d in check_source(source, "readout.py", config)]
    assert found == [("TPU201", 8)]
