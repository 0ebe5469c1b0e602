"""`verify --compare` and `fix --prove` find the rewrites `tpulint fix` offers: they analyse the
target's files with the whole-project model, so what a helper in another module returns (a
tensor) is known. Pure analysis, no torch: the trainings are in test_equivalence.py."""

from __future__ import annotations

from pathlib import Path

from tpulint.runtime.api import _fix_files
from tpulint.runtime.prove import _Prover

from tpulint.config.settings import load_config

BASE = """\
import lightning as L


class Base(L.LightningModule):
    def configure_optimizers(self):
        return None
"""
UTILS = """\
import torch


def gather_scores(batch):
    return torch.stack(batch)
"""
MODEL = """\
from pkg.base import Base
from pkg.utils import gather_scores


class Model(Base):
    def training_step(self, batch, batch_idx):
        vals = gather_scores(batch)
        if vals.sum() > 0:
            vals = vals * 2
        return vals[vals > 0].sum()
"""


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(BASE)
    (package / "utils.py").write_text(UTILS)
    (package / "model.py").write_text(MODEL)
    return package / "model.py"


def test_prove_sees_a_helper_modules_tensor(tmp_path: Path) -> None:
    model = str(_project(tmp_path))
    configs = {model: load_config(start=Path(model).parent)}
    prover = _Prover("pkg.model:Model", [model], configs, str(tmp_path), tmp_path, {}, None)
    candidates, _ = prover.rewrites()
    codes = sorted(d.code for rewrite in candidates for d in rewrite.findings)
    # `vals` is a tensor only through pkg/utils.py: the `if` on its value has a rewrite.
    assert "TPU104" in codes
    fixed = prover.fixed_sources(candidates)[model]
    assert "torch.where(vals.sum() > 0, vals * 2, vals)" in fixed.source


def test_compare_fixes_with_the_whole_project(tmp_path: Path) -> None:
    model = str(_project(tmp_path))
    out = tmp_path / "fixed"
    out.mkdir()
    fixed = _fix_files([model], out, str(tmp_path))
    assert {fix["code"] for fix in fixed.fixes} >= {"TPU104", "TPU202"}
