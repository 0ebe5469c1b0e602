"""Whole-file fixtures of the data-pipeline rules (TPU301-TPU305).

Each `tests/fixtures/data_pipeline/NAME.in.py` (or `.in.yaml`) is a realistic TPU-era
DataModule or LightningCLI config; `NAME.out.*` is what `fix_source(..., unsafe=True)` with the
TPU3 rules makes of it. Run `pytest --update-snapshots` to rewrite the `.out` files after an
intended change, then review the diff.

The files are checked under their bare names (`mnist_tpu_era.py`): the TPU3 rules skip files
under `tests/`, whose batch sizes are sized for CPU test runs.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import libcst as cst
import pytest

from tests.helpers import make_project, run_cli
from tpulint.config.settings import Config
from tpulint.datatypes.diagnostics import Applicability
from tpulint.engine.source import check_source, fix_source

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "data_pipeline"
INPUTS = sorted(p for p in FIXTURES.iterdir() if ".in." in p.name)
# TPU302 is a preview rule: preview mode runs it.
CONFIG = Config.from_mapping(
    {"select": ["TPU301", "TPU302", "TPU303", "TPU304", "TPU305"], "preview": True}
)

# What each fixture must report (code -> count), so a rule that goes silent is caught even
# when the snapshot happens to be unchanged. TPU302 grades only the MNIST project, whose
# model is linear layers over flattened images (the batch is the rows of its matmuls); the
# text classifier feeds a pretrained transformer (rows are batch x tokens), and the speech
# data module and the LightningCLI config show no model at all.
# The TPU-era samplers of both take `xm.xrt_world_size()`/`xm.get_ordinal()`: the world size
# and rank of the XLA processes, so they shard right (TPU301 is silent; the removed names are
# TPU501's).
EXPECTED = {
    "mnist_tpu_era": {"TPU302": 2, "TPU303": 1},
    "text_classifier": {"TPU303": 1, "TPU304": 1, "TPU305": 1},
    "speech_datamodule": {"TPU303": 2, "TPU304": 1},
    "lightningcli_config": {},
}


def _name(path: Path) -> str:
    return path.name.split(".in.", 1)[0]


def _checked_path(path: Path) -> str:
    return path.name.replace(".in.", ".")


def _expected_output(path: Path) -> Path:
    return path.with_name(path.name.replace(".in.", ".out."))


@pytest.mark.parametrize("path", INPUTS, ids=_name)
def test_fixture_findings(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = Counter(d.code for d in check_source(text, _checked_path(path), CONFIG))
    assert dict(found) == EXPECTED[_name(path)]


@pytest.mark.parametrize("path", INPUTS, ids=_name)
def test_fixture_fix(path: Path, update_snapshots: bool) -> None:
    text = path.read_text(encoding="utf-8")
    checked = _checked_path(path)
    result = fix_source(text, checked, CONFIG, unsafe=True)
    assert result.error is None, result.error
    expected_path = _expected_output(path)
    if update_snapshots:
        expected_path.write_text(result.source, encoding="utf-8")
    assert result.source == expected_path.read_text(encoding="utf-8"), (
        f"{path.name}: the fixed code differs from {expected_path.name} "
        "(run pytest --update-snapshots and review the diff if the change is intended)"
    )
    if checked.endswith(".py"):
        cst.parse_module(result.source)
    again = fix_source(result.source, checked, CONFIG, unsafe=True)
    assert again.source == result.source, f"{path.name}: a second fix run changed the code"
    # What is left has no applicable fix.
    for diagnostic in again.remaining:
        fix = diagnostic.fix
        assert fix is None or fix.applicability is Applicability.DISPLAY_ONLY, (
            f"{path.name}: {diagnostic.code} at line {diagnostic.start.line} still has a fix"
        )


def test_safe_fixes_leave_samplers_with_the_xla_world_alone() -> None:
    """The TPU-era samplers shard with the XLA world size and rank: nothing to remove, and the
    batch sizes and drop_last changes are unsafe, so a safe run changes nothing."""
    path = FIXTURES / "mnist_tpu_era.in.py"
    text = path.read_text(encoding="utf-8")
    result = fix_source(text, _checked_path(path), CONFIG, unsafe=False)
    assert result.fixed == [] and result.source == text
    assert "batch_size: int = 10" in result.source and "DistributedSampler(" in result.source


def test_batch_multiple_128() -> None:
    path = FIXTURES / "mnist_tpu_era.in.py"
    config = Config.from_mapping({"select": ["TPU302"], "batch-multiple": 128, "preview": True})
    found = check_source(path.read_text(encoding="utf-8"), _checked_path(path), config)
    assert [d.start.line for d in found] == [21, 88]
    assert "fills 10 of the 128 rows of one 128-row tile: 92%" in found[1].message


def test_the_batch_sizes_of_a_preview_rule_need_preview() -> None:
    path = FIXTURES / "mnist_tpu_era.in.py"
    config = Config.from_mapping({"select": ["TPU302"]})
    assert check_source(path.read_text(encoding="utf-8"), _checked_path(path), config) == []


def test_prepare_data_a_launcher_calls_on_a_module_it_picks_by_name(tmp_path: Path) -> None:
    """TPU310: a launcher that builds its data module from a table and calls
    `prepare_data()` itself before fit sets the attributes in the process the device
    processes are forked from; without that call the finding stays."""
    data = (
        "import lightning as L\n\n\n"
        "class Graphs(L.LightningDataModule):\n"
        "    def prepare_data(self):\n"
        "        self.train = list(range(8))\n\n"
        "    def train_dataloader(self):\n"
        "        return self.train\n\n\n"
        "DATASETS = {'graphs': Graphs}\n"
    )
    launcher = (
        "import lightning as L\n\n"
        "from pkg.data import DATASETS\n\n\n"
        "def main(name, model):\n"
        "    data = DATASETS[name]()\n"
        "    data.prepare_data()\n"
        "    L.Trainer(accelerator='tpu').fit(model, data)\n"
    )
    files = {"pkg/__init__.py": "", "pkg/data.py": data, "pkg/train.py": launcher}
    root = make_project(tmp_path / "called", files, 'select = ["TPU310"]\n')
    assert "TPU310" not in run_cli(["check", "--no-cache", "."], root).stdout
    files["pkg/train.py"] = launcher.replace("    data.prepare_data()\n", "")
    root = make_project(tmp_path / "not_called", files, 'select = ["TPU310"]\n')
    assert "TPU310" in run_cli(["check", "--no-cache", "."], root).stdout


def test_prepare_data_of_a_class_only_one_device_trainers_fit(tmp_path: Path) -> None:
    """TPU310: a class whose only launcher builds `Trainer(devices=1)` trains in one process,
    which runs `prepare_data` itself; a class another launcher fits on every device (or
    `tpu_cores=8`) stays reported."""
    model = (
        "import lightning as L\n\n\n"
        "class Single(L.LightningModule):\n"
        "    def prepare_data(self):\n"
        "        self.train_set = list(range(8))\n\n"
        "    def train_dataloader(self):\n"
        "        return self.train_set\n\n\n"
        "class Shared(L.LightningModule):\n"
        "    def prepare_data(self):\n"
        "        self.train_set = list(range(4))\n\n"
        "    def train_dataloader(self):\n"
        "        return self.train_set\n"
    )
    one = (
        "import lightning as L\n\n"
        "from pkg.model import Single, Shared\n\n\n"
        "def main():\n"
        "    cores = 1\n"
        "    L.Trainer(accelerator='tpu', tpu_cores=cores).fit(Single())\n"
        "    L.Trainer(accelerator='auto', devices=1).fit(Shared())\n\n\n"
        "if __name__ == '__main__':\n"
        "    main()\n"
    )
    every = (
        "import lightning as L\n\n"
        "from pkg.model import Shared\n\n\n"
        "def main():\n"
        "    L.Trainer(accelerator='tpu', devices='auto').fit(Shared())\n\n\n"
        "if __name__ == '__main__':\n"
        "    main()\n"
    )
    files = {"pkg/__init__.py": "", "pkg/model.py": model, "train_one.py": one}
    root = make_project(tmp_path / "one", files, 'select = ["TPU310"]\n')
    assert "TPU310" not in run_cli(["check", "--no-cache", "."], root).stdout
    files["train_all.py"] = every
    root = make_project(tmp_path / "every", files, 'select = ["TPU310"]\n')
    out = run_cli(["check", "--no-cache", "."], root).stdout
    assert out.count("TPU310") == 1 and "model.py:14:" in out, out
