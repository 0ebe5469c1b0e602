"""Regenerate examples/tpu_ready from examples/tpu_unready with tpulint itself.

    python examples/make_ready.py

It copies tpu_unready/ and runs `tpulint fix --unsafe-fixes` on the copy: every safe and unsafe
fix, the masked mean of the loss (TPU202) included. Any display-only suggestion left would be
applied too, as a user does by hand after reading `tpulint check --output-format full` (there
is none left today). tests/test_examples.py checks that tpu_ready/ is exactly this output.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from tpulint.config.settings import Config
from tpulint.engine.source import check_source, fix_source
from tpulint.testing import apply_suggestions

HERE = Path(__file__).resolve().parent


def ready_sources(unready: Path) -> dict[str, str]:
    """File name -> the TPU-ready source tpulint makes of it."""
    # Every rule, preview ones included (examples/pyproject.toml turns preview on).
    config = Config.from_mapping({"select": ["TPU"], "preview": True}, root=unready)
    out = {}
    for path in sorted(unready.glob("*.py")):
        fixed = fix_source(path.read_text(encoding="utf-8"), str(path), config, unsafe=True).source
        remaining = check_source(fixed, str(path), config)
        out[path.name] = apply_suggestions(fixed, remaining)
    return out


def main() -> int:
    target = HERE / "tpu_ready"
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "tpu_unready"
        shutil.copytree(HERE / "tpu_unready", copy, ignore=shutil.ignore_patterns("__pycache__"))
        sources = ready_sources(copy)
    target.mkdir(exist_ok=True)
    for name, text in sources.items():
        (target / name).write_text(text, encoding="utf-8")
        print(target / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
