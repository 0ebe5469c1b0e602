"""A LightningModule's saved hyperparameters (`self.save_hyperparameters()`) and a component's
option filled from a config block_cfg: `self.hparams.<name>`, `self.hparams["name"]` and the
constructor's own parameter hold the default no construction or config changes, and an option
every shipped config sets to one literal holds it. Counter-cases keep the branch: a config
that lists the key, a LightningCLI (any `--model.<name>` flag sets it), a parser option of
that name."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.helpers import project_model
from tpulint.analysis.config_facts import config_facts
from tpulint.analysis.project import ProjectModel


def reason_at(model: ProjectModel, tmp_path: Path, name: str, marker: str) -> str | None:
    """The scope's reason at the statement of the line of `name` that `marker` ends."""
    path = str(tmp_path / name)
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if marker in line:
            return model.scope.reason(path, number, len(line) - len(line.lstrip()) + 1)
    raise AssertionError(f"{marker!r} not in {name}")


def project(tmp_path: Path, files: dict[str, str]) -> ProjectModel:
    """The project model of `files`, its YAML files read as configs."""
    code = {name: text for name, text in files.items() if not name.endswith(".yaml")}
    model = project_model(tmp_path, code)
    facts = []
    for name, text in files.items():
        if name.endswith(".yaml"):
            path = tmp_path / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text), encoding="utf-8")
            facts.append(config_facts(str(path), path.read_text(encoding="utf-8")))
    return ProjectModel(model.modules.values(), configs=facts)


MODEL = """
import lightning as L
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, dim: int, wide_gate: bool = False, residual: bool = True):
        super().__init__()
        self.wide_gate, self.residual = (wide_gate, residual)
        self.lin = nn.Linear(dim, dim)

    def forward(self, x, mask):
        if self.wide_gate:
            x[mask] = 0  # WIDE
        return self.lin(x)


class Lit(L.LightningModule):
    def __init__(self, dim: int, lr: float = 1e-3, stepwise: bool = False, block_cfg=None):
        super().__init__()
        self.save_hyperparameters(logger=False)
        self.gate = Gate(dim, wide_gate=block_cfg.wide_gate)
        if stepwise:
            self.embed = nn.Embedding(10, dim)  # INIT

    def forward(self, x, mask):
        if self.hparams.stepwise:
            x = x[mask]  # ATTR
        return self.gate(x, mask)

    def training_step(self, batch, batch_idx):
        x, mask = batch
        if self.hparams["stepwise"]:
            x = x[mask]  # KEY
        return self(x, mask).sum()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
"""

TRAIN = """
import hydra
import lightning as L


@hydra.main(config_path="configs", config_name="train")
def main(cfg):
    model = hydra.utils.instantiate(cfg.model)
    L.Trainer(accelerator="tpu").fit(model)


if __name__ == "__main__":
    main()
"""

SMALL = "_target_: lab.model.Lit\ndim: 16\nblock_cfg:\n  wide_gate: false\n"
BIG = "_target_: lab.model.Lit\ndim: 64\nlr: 0.0001\nblock_cfg:\n  wide_gate: false\n"


def _files(**extra: str) -> dict[str, str]:
    return {
        "pyproject.toml": "[project]\nname = 'lab'\n",
        "lab/__init__.py": "",
        "lab/model.py": MODEL,
        "train.py": TRAIN,
        "configs/model/small.yaml": SMALL,
        "configs/model/big.yaml": BIG,
        **extra,
    }


def test_a_saved_hyperparameter_no_config_lists_holds_its_default(tmp_path: Path) -> None:
    model = project(tmp_path, _files())
    for marker in ("# ATTR", "# KEY", "# INIT"):
        found = reason_at(model, tmp_path, "lab/model.py", marker)
        assert found is not None and "stepwise" in found, marker


def test_an_option_every_config_sets_false_holds_it(tmp_path: Path) -> None:
    model = project(tmp_path, _files())
    found = reason_at(model, tmp_path, "lab/model.py", "# WIDE")
    assert found is not None and "wide_gate" in found


def test_a_config_listing_the_key_keeps_the_branch(tmp_path: Path) -> None:
    listed = "_target_: lab.model.Lit\ndim: 8\nstepwise: true\nblock_cfg:\n  wide_gate: true\n"
    model = project(tmp_path, _files(**{"configs/model/ar.yaml": listed}))
    for marker in ("# ATTR", "# KEY", "# INIT", "# WIDE"):
        assert reason_at(model, tmp_path, "lab/model.py", marker) is None, marker


def test_a_lightning_cli_keeps_the_branch(tmp_path: Path) -> None:
    cli = """
    from lightning.pytorch.cli import LightningCLI
    from lab.model import Lit

    if __name__ == "__main__":
        LightningCLI(Lit)
    """
    files = _files(**{"train.py": cli})
    del files["configs/model/small.yaml"], files["configs/model/big.yaml"]
    model = project(tmp_path, files)
    for marker in ("# ATTR", "# KEY"):
        assert reason_at(model, tmp_path, "lab/model.py", marker) is None, marker


def test_a_parser_option_of_that_name_keeps_the_branch(tmp_path: Path) -> None:
    script = """
    import argparse
    import lightning as L
    from lab.model import Lit

    parser = argparse.ArgumentParser()
    parser.add_argument("--stepwise", type=int, default=0)
    parser.add_argument("--dim", type=int, default=16)
    args = parser.parse_args()
    L.Trainer(accelerator="tpu").fit(Lit(**vars(args)))
    """
    files = _files(**{"train.py": script})
    del files["configs/model/small.yaml"], files["configs/model/big.yaml"]
    model = project(tmp_path, files)
    for marker in ("# ATTR", "# KEY", "# INIT"):
        assert reason_at(model, tmp_path, "lab/model.py", marker) is None, marker


def test_hyperparameters_saved_from_another_object_keep_the_branch(tmp_path: Path) -> None:
    other = MODEL.replace(
        "self.save_hyperparameters(logger=False)", "self.save_hyperparameters(block_cfg)"
    )
    model = project(tmp_path, _files(**{"lab/model.py": other}))
    for marker in ("# ATTR", "# KEY"):
        assert reason_at(model, tmp_path, "lab/model.py", marker) is None, marker
