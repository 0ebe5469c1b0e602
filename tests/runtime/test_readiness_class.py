"""`TPUReadiness` is a Callback of each Lightning package the process uses, built through the
thin `tpulint.lightning` entry point (tpulint's core imports no torch), and records nothing
until a Trainer runs it. In a subprocess: the packages imported are the test's subject."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.runtime

CODE = """
import json, sys
before = set(sys.modules)
import tpulint.lightning
heavy = ("torch", "lightning", "pytorch_lightning")
light = not any(m.split(".")[0] in heavy for m in set(sys.modules) - before)
import lightning.pytorch as L
import pytorch_lightning as pl
from tpulint.lightning import TPUReadiness
callback = TPUReadiness(sys.argv[1])
print(json.dumps({
    "light_entry_point": light,
    "lightning": isinstance(callback, L.Callback),
    "pytorch_lightning": isinstance(callback, pl.Callback),
    "class": type(callback).__name__,
    "files": sorted(p.name for p in __import__("pathlib").Path(sys.argv[1]).iterdir()),
}))
"""


def test_one_callback_for_both_packages(xla: None, tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-c", CODE, str(tmp_path / "record")],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PJRT_DEVICE": "CPU", "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["light_entry_point"] is True  # `import tpulint.lightning` imports no torch
    assert found["lightning"] and found["pytorch_lightning"]
    assert found["class"] == "TPUReadiness"
    # created before any training: the run's metadata, nothing else yet
    assert [name for name in found["files"] if name.endswith(".jsonl")] == [
        name for name in found["files"] if name.startswith("process-")
    ]
