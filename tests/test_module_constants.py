"""Module-level tensors built at import time (`TABLE = torch.tensor([...])`, a torch factory
without a device) and never rebound, changed in place or moved are CPU constants, in their
module and where another module imports them: selections and `torch.unique` of them are
host ops with a fixed result (TPU201/TPU202 stay silent); a table moved with `.to(` or
selected by a device mask stays reported."""

from __future__ import annotations

import os
from pathlib import Path

from tests.helpers import make_project
from tpulint.config.settings import Config
from tpulint.runner.paths import check_paths

TABLES = (
    "import torch\n\n"
    "SLOTS = torch.tensor([4, 0, 2, 2, 1])\n"
    "SLOT_MASK = torch.tensor([1, 1, 1, 0, 1])\n"
    "PLACED = torch.tensor([1, 0, 1, 1, 1])\n"
    "ON_DEVICE = torch.tensor([1, 0, 1, 1, 1], device='cuda')\n\n\n"
    "def place(device):\n"
    "    return PLACED.to(device)\n"
)

STEP = (
    "import lightning as L\nimport torch\n\n"
    "from pkg.tables import {name}\n\n\n"
    "class Model(L.LightningModule):\n"
    "    def training_step(self, batch, batch_idx):\n"
    "        out = self.net(batch['x'])\n"
    "        {line}\n"
    "        return out.sum()\n"
)


def _codes(tmp_path: Path, name: str, line: str) -> list[str]:
    files = {
        "pkg/__init__.py": "",
        "pkg/tables.py": TABLES,
        "pkg/model.py": STEP.format(name=name, line=line),
    }
    root = make_project(tmp_path / "p", files, pyproject='select = ["TPU201", "TPU202"]\n')
    config = Config.from_mapping({"select": ["TPU201", "TPU202"]}, root=root)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        result = check_paths(["."], config, jobs=1)
    finally:
        os.chdir(cwd)
    return [d.code for d in result.diagnostics if d.path.endswith("model.py")]


def test_imported_cpu_constants_are_host_tables(tmp_path: Path) -> None:
    assert _codes(tmp_path, "SLOTS, SLOT_MASK", "used = SLOTS[SLOT_MASK == 1]") == []
    assert _codes(tmp_path, "SLOTS", "kinds = torch.unique(SLOTS)") == []
    assert _codes(tmp_path, "SLOT_MASK", "out[:, SLOT_MASK == 0] = 0") == []


def test_moved_or_device_tables_stay_reported(tmp_path: Path) -> None:
    assert _codes(tmp_path, "PLACED", "kinds = torch.unique(PLACED)") == ["TPU201"]
    assert _codes(tmp_path, "ON_DEVICE", "kinds = torch.unique(ON_DEVICE)") == ["TPU201"]
    # moved in the importing module
    moved = "out = out + SLOTS.to(out.device).sum(); kinds = torch.unique(SLOTS)"
    assert _codes(tmp_path, "SLOTS", moved) == ["TPU201"]
    # a CPU table selected by a device mask
    assert _codes(tmp_path, "SLOTS", "used = SLOTS[batch['y'] > 0]") == ["TPU202"]
