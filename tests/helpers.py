"""Test helpers: throwaway projects, running the CLI in-process and as a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from tpulint.analysis.project import ProjectModel, build_model
from tpulint.cli import cli

UNREADY_MODULE = textwrap.dedent(
    """\
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.loss_fn(self(batch))
            self.log("train_loss", loss.item())
            self.task.log('total', loss.item())
            return loss
    """
)
CLEAN_MODULE = textwrap.dedent(
    """\
    import lightning as L


    class Model(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.loss_fn(self(batch))
            self.log("train_loss", loss)
            return loss
    """
)
LEGACY_TRAINER = textwrap.dedent(
    """\
    import lightning as L

    trainer = L.Trainer(tpu_cores=8, max_epochs=1)
    """
)


PINNED_SELECT = 'select = ["TPU001", "TPU101", "TPU102", "TPL"]\n'


def make_project(root: Path, files: dict[str, str], pyproject: str | None = "") -> Path:
    """Write `files` under `root`; a pyproject.toml with `[tool.tpulint]` + `pyproject`.

    Unless `pyproject` selects rules itself, the rule set is pinned to the three rules these
    engine tests are written against, so they do not change as the catalogue grows."""
    root.mkdir(parents=True, exist_ok=True)
    if pyproject is not None and "select" not in pyproject:
        pyproject = PINNED_SELECT + pyproject
    if pyproject is not None:
        (root / "pyproject.toml").write_text(
            '[project]\nname = "demo"\nversion = "0"\n\n[tool.tpulint]\n' + pyproject,
            encoding="utf-8",
        )
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


def run_cli(args: list[str], cwd: Path, stdin: str | None = None) -> Result:
    """Run the CLI in-process (click's runner), from `cwd`."""
    runner = CliRunner()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        result = runner.invoke(cli, args, input=stdin, catch_exceptions=False)
    finally:
        os.chdir(old)
    return Result(result.exit_code, result.stdout, result.stderr)


def run_subprocess(
    args: list[str], cwd: Path, stdin: str | None = None, env: dict | None = None
) -> Result:
    """Run `python -m tpulint ARGS` as a real process."""
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "tpulint", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=300,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def repository_model(tmp_path: Path, files: dict[str, str]) -> ProjectModel:
    """The project model of `files` written under `tmp_path`, a git checkout (a `.git`
    folder: the repository's root for the scope)."""
    (tmp_path / ".git").mkdir(parents=True, exist_ok=True)
    items = []
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        if name.endswith(".py"):
            items.append((str(path), path.read_text(encoding="utf-8")))
    return build_model(items)


def project_model(tmp_path: Path, files: dict[str, str]) -> ProjectModel:
    """The project model of `files` (every one, configs too) written under `tmp_path`, with
    no `.git` folder: the scope finds the repository's root as a user's unversioned tree."""
    items = []
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        items.append((str(path), path.read_text(encoding="utf-8")))
    return build_model(items)


def scope_reason(model: ProjectModel, tmp_path: Path, name: str, marker: str) -> str | None:
    """The scope's reason at the first line of `name` that contains `marker`."""
    path = str(tmp_path / name)
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if marker in line:
            return model.scope.reason(path, number, line.index(marker) + 1)
    raise AssertionError(f"{marker!r} not in {name}")
