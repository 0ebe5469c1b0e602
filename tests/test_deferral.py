"""Deferring per-step host reads to the end of the epoch (rules/rewrite/deferral.py): the forms
the rewrite produces, the shapes where it offers none and says why (a wrong fix is worse than
no fix), and the fix across files as `tpulint fix` applies it (whole or not at all)."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from tests.helpers import make_project, run_cli
from tpulint.config.settings import Config
from tpulint.engine.source import check_source, fix_source
from tpulint.runner.paths import check_paths, fix_paths

HEAD = (
    "import lightning as L\nimport numpy as np\nimport torch\n\n\nclass Model(L.LightningModule):\n"
)


def model(body: str) -> str:
    return HEAD + textwrap.indent(textwrap.dedent(body), "    ")


def findings(source: str, codes: str = "TPU101,TPU103") -> list:
    config = Config.from_mapping({"select": codes.split(",")})
    return [d for d in check_source(source, "m.py", config) if d.code in codes.split(",")]


def fixed(source: str, codes: str = "TPU101,TPU103") -> str:
    config = Config.from_mapping({"select": codes.split(",")})
    result = fix_source(source, "m.py", config, unsafe=True)
    assert result.error is None
    again = fix_source(result.source, "m.py", config, unsafe=True)
    assert again.source == result.source, "a second fix run changed the code"
    return result.source


# --- the forms it produces ---------------------------------------------------------------------

FORMS = [
    (
        "numbers-aggregated",
        """\
        def training_step(self, batch, batch_idx):
            loss = self(batch).mean()
            self.losses.append(loss.item())
            return loss

        def on_train_epoch_end(self):
            if self.losses:
                self.log("mean", sum(self.losses) / len(self.losses))
            self.losses.clear()
        """,
        ["self.losses.append(loss.detach())", "sum(torch.stack(self.losses).tolist())"],
    ),
    (
        "wrapped-in-int-through-a-local",
        """\
        def validation_step(self, batch, batch_idx):
            hits = (self(batch).argmax(1) == batch).sum()
            n = int(hits.item())
            self.hits.append(n)

        def on_validation_epoch_end(self):
            total = np.sum(self.hits)
            last = self.hits[-1]
            self.hits = []
        """,
        [
            "n = hits.detach()",
            "np.sum([int(v) for v in torch.stack(self.hits).tolist()] if self.hits else [])",
            "last = int(self.hits[-1].item())",
        ],
    ),
    (
        "a-keyed-container-and-an-early-return",
        """\
        def training_step(self, batch, batch_idx):
            loss = self(batch).sum()
            self.stats["loss"].append(float(loss))
            return loss

        def on_train_epoch_end(self):
            if not self.stats["loss"]:
                return
            best = min(self.stats["loss"])
            del self.stats["loss"][:]
        """,
        [
            'self.stats["loss"].append(loss.detach())',
            'best = min([float(v) for v in torch.stack(self.stats["loss"]).tolist()])',
        ],
    ),
    (
        "predictions-joined",
        """\
        def validation_step(self, batch, batch_idx):
            scores = self(batch)
            self.preds.append(scores.max(dim=1)[1].cpu())
            self.labels.append(scores.argmax(-1).detach().cpu().numpy())

        def on_validation_epoch_end(self):
            preds = torch.cat(self.preds, dim=0)
            labels = np.concatenate(self.labels, axis=0)
            self.preds.clear()
            self.labels.clear()
        """,
        [
            "self.preds.append(scores.max(dim=1)[1].detach())",
            "self.labels.append(scores.argmax(-1).detach())",
            "preds = torch.cat(self.preds, dim=0).cpu()",
            "labels = torch.cat(self.labels, dim=0).cpu().numpy()",
        ],
    ),
    (
        "emptied-in-the-base-hook-through-super",
        """\
        def training_step(self, batch, batch_idx):
            loss = self(batch).mean()
            self.losses.append(loss.item())
            return loss

        def on_train_epoch_end(self):
            self.losses.clear()
        """,
        ["self.losses.append(loss.detach())"],
    ),
]
# Appended at the top level after the class (the subclass of that form).
TAILS = {
    "emptied-in-the-base-hook-through-super": (
        "\n\nclass Child(Model):\n    def on_train_epoch_end(self):\n"
        "        super().on_train_epoch_end()\n"
    ),
    "a-subclass-hook-that-does-not-empty-it": (
        "\n\nclass Child(Model):\n    def on_train_epoch_end(self):\n        pass\n"
    ),
}


@pytest.mark.parametrize(("name", "body", "expected"), FORMS, ids=[f[0] for f in FORMS])
def test_forms(name: str, body: str, expected: list[str]) -> None:
    source = model(body) + TAILS.get(name, "")
    found = findings(source)
    assert found and all(
        d.fix is not None and d.fix.applicability.value == "unsafe" for d in found
    ), [d.message for d in found]
    result = fixed(source)
    for text in expected:
        assert text in result, f"{text!r} not in\n{result}"


def test_a_number_not_provably_one_value_keeps_item_s_contract() -> None:
    """`.item()` takes any one-element tensor: the deferred value is reshaped to one value, so
    `torch.stack` of the per-step values gives the numbers `.item()` gave."""
    source = model(
        """\
        def training_step(self, batch, batch_idx):
            out = self(batch)
            self.norms.append(out.norm(dim=1).item())

        def on_train_epoch_end(self):
            self.log("norm", max(self.norms))
            self.norms.clear()
        """
    )
    assert "self.norms.append(out.norm(dim=1).detach().reshape(()))" in fixed(source)


# --- where it offers none, and says why ------------------------------------------------------

NO_FIX = [
    (
        "read-every-step",
        """\
        def training_step(self, batch, batch_idx):
            loss = self(batch).mean()
            self.losses.append(loss.item())
            self.log("running", np.mean(self.losses))
            return loss

        def on_train_epoch_end(self):
            self.losses.clear()
        """,
        "`self.losses` is read every step, in `training_step`",
    ),
    (
        "printed-every-step",
        """\
        def training_step(self, batch, batch_idx):
            value = self(batch).mean().item()
            self.losses.append(value)
            print(value)

        def on_train_epoch_end(self):
            self.losses.clear()
        """,
        "`value` is also printed in the step",
    ),
    (
        "never-emptied",
        """\
        def training_step(self, batch, batch_idx):
            self.history.append(self(batch).mean().item())

        def on_train_epoch_end(self):
            self.log("last", self.history[-1])
        """,
        "is not emptied when the train epoch ends",
    ),
    (
        "emptied-only-sometimes",
        """\
        def training_step(self, batch, batch_idx):
            self.losses.append(self(batch).mean().item())

        def on_train_epoch_end(self):
            if self.current_epoch % 2:
                self.losses.clear()
        """,
        "is not emptied when the train epoch ends",
    ),
    (
        "emptied-when-the-next-epoch-starts",
        """\
        def on_validation_epoch_start(self):
            self.preds = []

        def validation_step(self, batch, batch_idx):
            self.preds.append(self(batch).argmax(1).cpu())

        def on_validation_epoch_end(self):
            self.log("n", torch.cat(self.preds).float().mean())
        """,
        "is not emptied when the validation epoch ends",
    ),
    (
        "filled-in-two-places",
        """\
        def training_step(self, batch, batch_idx):
            self.losses.append(self(batch).mean().item())

        def validation_step(self, batch, batch_idx):
            self.losses.append(self(batch).mean().item())

        def on_train_epoch_end(self):
            self.losses.clear()

        def on_validation_epoch_end(self):
            self.losses.clear()
        """,
        "`self.losses` is also filled in `",
    ),
    (
        "large-per-step-tensors",
        """\
        def validation_step(self, batch, batch_idx):
            self.logits.append(self(batch).cpu())

        def on_validation_epoch_end(self):
            self.log("n", torch.cat(self.logits).mean())
            self.logits.clear()
        """,
        "each step keeps `self(batch)`, which is not visibly small",
    ),
    (
        "python-lists",
        """\
        def validation_step(self, batch, batch_idx):
            self.ids.append(self(batch).argmax(1).tolist())

        def on_validation_epoch_end(self):
            self.ids.clear()
        """,
        "collected as Python lists",
    ),
    (
        "tensors-read-one-by-one",
        """\
        def validation_step(self, batch, batch_idx):
            self.preds.append(self(batch).argmax(1).cpu())

        def on_validation_epoch_end(self):
            for p in self.preds:
                self.log("first", p[0].float())
            self.preds.clear()
        """,
        "`self.preds` is read tensor by tensor in `on_validation_epoch_end`",
    ),
    (
        "passed-to-a-helper-that-may-keep-it",
        """\
        def training_step(self, batch, batch_idx):
            self.losses.append(self(batch).mean().item())

        def on_train_epoch_end(self):
            self.archive.extend_with(self.losses)
            self.losses.clear()
        """,
        "passed to `self.archive.extend_with`",
    ),
    (
        "a-subclass-hook-that-does-not-empty-it",
        """\
        def training_step(self, batch, batch_idx):
            self.losses.append(self(batch).mean().item())

        def on_train_epoch_end(self):
            self.losses.clear()
        """,
        "`on_train_epoch_end` or `training_epoch_end` of `Child`",
    ),
    (
        "returned-by-a-method-anyone-may-call",
        """\
        def training_step(self, batch, batch_idx):
            self.losses.append(self(batch).mean().item())

        def get_losses(self):
            return self.losses

        def on_train_epoch_end(self):
            self.losses.clear()
        """,
        "`self.losses` is read in `get_losses`",
    ),
]


@pytest.mark.parametrize(("name", "body", "reason"), NO_FIX, ids=[f[0] for f in NO_FIX])
def test_no_fix(name: str, body: str, reason: str) -> None:
    source = model(body) + TAILS.get(name, "")
    found = [d for d in findings(source) if "(no fix:" in d.message]
    assert found, [d.message for d in findings(source)]
    assert any(reason in d.message for d in found), [d.message for d in found]
    assert all(d.fix is None or d.fix.applicability.value == "display-only" for d in found)
    assert fixed(source) == source


# --- across files, through the runner ------------------------------------------------------

MODEL = """\
import lightning as L
import torch.nn.functional as F

from .callbacks import History


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.losses = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.losses.append(loss.item())
        return loss

    def on_train_epoch_end(self):
        self.losses.clear()

    def configure_callbacks(self):
        return [History()]
"""
CALLBACKS = """\
import lightning as L

from .metrics import summary


class History(L.Callback):
    def __init__(self):
        self.rows = []

    def on_train_epoch_end(self, trainer, pl_module):
        self.rows.append(summary(pl_module))
"""
METRICS = """\
import statistics


def summary(module):
    return statistics.fmean(module.losses), len(module.losses)
"""
FILES = {
    "pkg/__init__.py": "",
    "pkg/model.py": MODEL,
    "pkg/callbacks.py": CALLBACKS,
    "pkg/metrics.py": METRICS,
}
SELECT = 'select = ["TPU101"]\n'


def test_one_fix_edits_the_producer_and_every_reader(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", FILES, pyproject=SELECT)
    result = run_cli(["check", ".", "--output-format", "json", "--no-cache"], root)
    (found,) = json.loads(result.stdout)["diagnostics"]
    fix = found["fix"]
    assert fix["applicability"] == "unsafe" and fix["group"]
    assert [e["content"] for e in fix["edits"]] == ["loss.detach()"]
    (other,) = fix["related"]
    assert other["path"] == str((root / "pkg/metrics.py").resolve())
    assert [e["content"] for e in other["edits"]] == [
        "import torch\n",
        "torch.stack(module.losses).tolist() if module.losses else []",
    ]
    applied = run_cli(["fix", ".", "--unsafe-fixes", "--apply", "--no-cache"], root)
    assert applied.exit_code == 0, applied.stderr
    assert "Rewrote pkg/metrics.py with the fix of a finding in another file" in applied.stderr
    assert "self.losses.append(loss.detach())" in (root / "pkg/model.py").read_text()
    metrics = (root / "pkg/metrics.py").read_text()
    assert metrics.startswith("import statistics\nimport torch\n")
    assert "statistics.fmean(torch.stack(module.losses).tolist() if module.losses else [])" in (
        metrics
    )
    assert (root / "pkg/callbacks.py").read_text() == CALLBACKS  # it passes the module on
    again = run_cli(["fix", ".", "--unsafe-fixes", "--apply", "--no-cache"], root)
    assert "Fixed 0 findings in 0 files" in again.stderr


def test_a_fix_across_files_is_applied_whole_or_not_at_all(tmp_path: Path) -> None:
    """A reader's file that cannot be written (read-only), or that the run does not cover,
    keeps the producer as written too."""
    root = make_project(tmp_path / "p", FILES, pyproject=SELECT)
    metrics = root / "pkg/metrics.py"
    metrics.chmod(0o444)
    try:
        result = run_cli(["fix", ".", "--unsafe-fixes", "--apply", "--no-cache"], root)
    finally:
        metrics.chmod(0o644)
    assert "the file is read-only" in result.stderr
    assert "the fix of pkg/model.py:15 TPU101 is not applied" in result.stderr
    assert (root / "pkg/model.py").read_text() == MODEL
    result = run_cli(["fix", "pkg/model.py", "--unsafe-fixes", "--apply", "--no-cache"], root)
    assert "pkg/metrics.py is not among the files being fixed" in result.stderr
    assert (root / "pkg/model.py").read_text() == MODEL and metrics.read_text() == METRICS


def test_a_suppressed_producer_is_not_rewritten(tmp_path: Path) -> None:
    model = MODEL.replace(
        "self.losses.append(loss.item())", "self.losses.append(loss.item())  # noqa: TPU101"
    )
    root = make_project(tmp_path / "p", {**FILES, "pkg/model.py": model}, pyproject=SELECT)
    run_cli(["fix", ".", "--unsafe-fixes", "--apply", "--no-cache"], root)
    assert (root / "pkg/model.py").read_text() == model
    assert (root / "pkg/metrics.py").read_text() == METRICS


def test_a_cached_result_is_checked_again_when_a_reader_changes(tmp_path: Path) -> None:
    """The fix depends on files the project model does not digest for the producer's file: a
    cached result is reused only while the whole project is unchanged."""
    root = make_project(tmp_path / "p", FILES, pyproject=SELECT)
    config = Config.from_mapping({"select": ["TPU101"]}, root=root)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        first = check_paths(["."], config, jobs=1)
        assert first.diagnostics[0].fix is not None
        (root / "pkg/callbacks.py").write_text(
            CALLBACKS + "\n    def on_train_batch_end(self, trainer, pl_module, *args):\n"
            "        print(pl_module.losses[-1])\n"
        )
        second = check_paths(["."], config, jobs=1)
    finally:
        os.chdir(cwd)
    (found,) = second.diagnostics
    assert found.fix is None or found.fix.applicability.value == "display-only"
    assert "`self.losses` is read every step, in `on_train_batch_end` (callbacks.py:" in (
        found.message
    )


def test_fix_paths_reports_the_other_files_as_changed(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", FILES, pyproject=SELECT)
    config = Config.from_mapping({"select": ["TPU101"]}, root=root)
    run = fix_paths([str(root)], config, unsafe=True, apply=False, use_cache=False, jobs=1)
    changed = sorted(Path(f.path).name for f in run.files if f.fix is not None and f.fix.changed)
    assert changed == ["metrics.py", "model.py"]
    assert sum(len(f.fix.fixed) for f in run.files if f.fix is not None) == 1
