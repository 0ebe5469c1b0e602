"""`fix --prove` on values a step collects for the end of the epoch, read there by the module,
a callback and a metrics helper in three files (tests/runtime/targets/deferred/): the rewrite
keeps them on the device while the epoch runs, is applied to the three files at once, and is
proven by training: the losses and parameters, and at the end of every epoch the module's and
the callback's state (the callback keeps the epoch summaries the helper computes) and the
logged values, with their Python types.

One scenario, two trainings on 8 emulated cores (as written, then with the rewrites).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tpulint.runtime.prove import ProveReport, prove
from verify_helpers import CORES, TARGETS

from tpulint.config.settings import Config
from tpulint.runner.paths import fix_paths

pytestmark = pytest.mark.runtime

MODEL = (TARGETS / "deferred" / "model.py").read_text().splitlines()
LOSS_LINE = MODEL.index("        self.train_losses.append(loss.item())") + 1
PREDS_LINE = MODEL.index("        self.val_preds.append(preds.cpu())") + 1


@pytest.fixture(scope="module")
def proven(xla: None, timed, tmp_path_factory: pytest.TempPathFactory) -> tuple[ProveReport, Path]:
    project = tmp_path_factory.mktemp("deferred")
    shutil.copytree(TARGETS / "deferred", project / "deferred")
    (project / "pyproject.toml").write_text("")
    report = timed(
        "fix --prove, values deferred across three files",
        prove,
        "deferred/model.py:Classifier",
        apply=True,
        cwd=str(project),
        cores=CORES,
    )
    return report, project / "deferred"


def test_prove_applies_the_deferral_in_every_file(proven: tuple[ProveReport, Path]) -> None:
    report, package = proven
    assert report.error is None, report.error
    applied = sorted((r.first.code, r.first.start.line) for r in report.applied)
    assert applied == [("TPU101", LOSS_LINE), ("TPU103", PREDS_LINE)]
    assert not report.refused and not report.not_run
    # Proven by one training with every rewrite: the same as written.
    assert len(report.trials) == 1
    _, trial = report.trials[0]
    assert trial.equivalence is not None and trial.equivalence.equivalent
    assert trial.equivalence.states > 0 and not trial.equivalence.nondeterministic
    assert sorted(report.written) == [
        "deferred/callbacks.py",
        "deferred/metrics.py",
        "deferred/model.py",
    ]
    model = (package / "model.py").read_text()
    assert "self.train_losses.append(loss.detach())" in model
    assert "self.val_preds.append(preds.detach())" in model
    assert "preds = torch.cat(self.val_preds).cpu()" in model
    assert "self.val_targets.append(y.cpu())" in model  # not visibly small: left as written
    callbacks = (package / "callbacks.py").read_text()
    assert "min(torch.stack(pl_module.train_losses).tolist() if pl_module.train_losses" in callbacks
    assert "import torch\n" in callbacks
    metrics = (package / "metrics.py").read_text()
    assert "losses = torch.stack(module.train_losses).tolist() if module.train_losses" in metrics


def test_the_proven_files_need_no_second_fix(proven: tuple[ProveReport, Path]) -> None:
    _, package = proven
    config = Config.from_mapping({"select": ["TPU1", "TPU2"]}, root=package.parent)
    again = fix_paths([str(package)], config, unsafe=True, apply=False, use_cache=False, jobs=1)
    assert not [f for f in again.files if f.fix is not None and f.fix.changed]
    left = [(d.code, d.start.line) for d in again.diagnostics]
    assert left == [("TPU103", MODEL.index("        self.val_targets.append(y.cpu())") + 1)]
