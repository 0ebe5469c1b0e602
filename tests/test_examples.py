"""The bundled examples: the TPU-unready project has exactly the findings the README shows,
and examples/tpu_ready is exactly what tpulint makes of it (and is clean)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from tests.helpers import run_subprocess
from tpulint.config.settings import load_config
from tpulint.engine.source import check_source

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _load_make_ready():
    spec = importlib.util.spec_from_file_location("make_ready", EXAMPLES / "make_ready.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_unready_findings() -> None:
    # The examples' own configuration (examples/pyproject.toml: preview on, for TPU302 and TPU303).
    config = load_config(start=EXAMPLES / "tpu_unready")
    assert config.preview
    found = []
    for path in sorted((EXAMPLES / "tpu_unready").glob("*.py")):
        for d in check_source(path.read_text(), str(path), config):
            found.append((path.name, d.start.line, d.code))
    assert found == [
        ("model.py", 31, "TPU302"),
        ("model.py", 44, "TPU202"),
        ("model.py", 45, "TPU102"),
        ("model.py", 52, "TPU102"),
        ("model.py", 58, "TPU303"),
        ("train.py", 8, "TPU001"),
    ]


def test_ready_is_what_tpulint_makes_of_unready(tmp_path: Path) -> None:
    copy = tmp_path / "tpu_unready"
    shutil.copytree(EXAMPLES / "tpu_unready", copy, ignore=shutil.ignore_patterns("__pycache__"))
    sources = _load_make_ready().ready_sources(copy)
    committed = {p.name: p.read_text() for p in (EXAMPLES / "tpu_ready").glob("*.py")}
    assert sources == committed, "examples/tpu_ready is stale: run python examples/make_ready.py"


def test_ready_is_clean() -> None:
    result = run_subprocess(["check", "examples/tpu_ready", "--no-cache"], EXAMPLES.parent)
    assert result.exit_code == 0, result.stdout
    assert "All checks passed (2 files checked)." in result.stdout
