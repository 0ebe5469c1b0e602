"""Dict keys held by string constants of the project (`batch[IMAGE_MASKS]` with
`IMAGE_MASKS = "image_masks"` in another module) are keys, not boolean masks (TPU202)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.helpers import make_project
from tpulint.config.settings import Config
from tpulint.runner.paths import check_paths

STEP = (
    "import lightning as L\n\n{imports}\n\n\n"
    "class Model(L.LightningModule):\n"
    "    def training_step(self, batch, batch_idx):\n"
    "        x = batch['x'][batch[{key}]]\n"
    "        return x.sum()\n"
)

KEYS = (
    "from typing import Final\n\n"
    'IMAGE_MASKS = "image_masks"\n'
    'PROMPT_MASK: Final[str] = "prompt_mask"\n'
    "VALID_MASK = make_key()\n\n\n"
    "class Keys:\n"
    '    PAD_MASK = "pad_mask"\n'
)


def _lines(tmp_path: Path, imports: str, key: str) -> list[int]:
    files = {
        "pkg/__init__.py": "from pkg.keys import IMAGE_MASKS\n",
        "pkg/keys.py": KEYS,
        "pkg/model.py": STEP.format(imports=imports, key=key),
    }
    root = make_project(tmp_path / "p", files, pyproject='select = ["TPU202"]\n')
    config = Config.from_mapping({"select": ["TPU202"]}, root=root)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        result = check_paths(["."], config, jobs=1)
    finally:
        os.chdir(cwd)
    return [d.start.line for d in result.diagnostics if d.code == "TPU202"]


def test_imported_string_constants_are_keys(tmp_path: Path) -> None:
    assert _lines(tmp_path, "from pkg.keys import IMAGE_MASKS", "IMAGE_MASKS") == []
    assert _lines(tmp_path, "from pkg.keys import PROMPT_MASK", "PROMPT_MASK") == []
    assert _lines(tmp_path, "from pkg import IMAGE_MASKS", "IMAGE_MASKS") == []  # re-exported
    assert _lines(tmp_path, "from pkg import keys", "keys.IMAGE_MASKS") == []
    assert _lines(tmp_path, "from pkg.keys import Keys", "Keys.PAD_MASK") == []


def test_a_constant_of_unknown_value_stays_a_mask(tmp_path: Path) -> None:
    assert _lines(tmp_path, "from pkg.keys import VALID_MASK", "VALID_MASK") == [8]
    assert _lines(tmp_path, "from pkg.other import OTHER_MASK", "OTHER_MASK") == [8]


MODEL = (
    "import lightning as L\nimport torch\nfrom torch import nn\n\n\n"
    "class Head(nn.Module):\n"
    "    def forward(self, data):\n"
    "        return data['x'].sum() * int(data['num_graphs'])\n\n\n"
    "def prepare(graph):\n"
    "    out = graph.to_dict()\n"
    "    out['num_graphs'] = torch.tensor(graph.num_graphs{device})\n"
    "    return out\n\n\n"
    "class Model(L.LightningModule):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.head = Head()\n\n"
    "    def training_step(self, batch, batch_idx):\n"
    "        return self.head({call})\n"
)


def _codes(tmp_path: Path, device: str = "", call: str = "prepare(batch)") -> list[tuple]:
    files = {"pkg/__init__.py": "", "pkg/model.py": MODEL.format(device=device, call=call)}
    root = make_project(tmp_path / "p", files, pyproject='select = ["TPU103"]\n')
    config = Config.from_mapping({"select": ["TPU103"]}, root=root)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        result = check_paths(["."], config, jobs=1)
    finally:
        os.chdir(cwd)
    return [(d.code, d.start.line) for d in result.diagnostics]


def test_a_key_the_step_writes_with_a_host_factory_is_a_cpu_tensor(tmp_path: Path) -> None:
    # the step's helper builds the entry after Lightning moved the batch: a CPU tensor
    assert _codes(tmp_path) == []


def test_a_key_written_on_the_device_or_outside_the_step_stays_a_device_tensor(
    tmp_path: Path,
) -> None:
    assert _codes(tmp_path / "a", device=", device=graph.x.device") == [("TPU103", 8)]
    # `prepare` never runs in the step: the batch's `num_graphs` is what Lightning moved
    assert _codes(tmp_path / "b", call="batch") == [("TPU103", 8)]
