"""The pre-commit hooks, run by the real pre-commit against this repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import LEGACY_TRAINER

ROOT = Path(__file__).resolve().parent.parent


def _pre_commit() -> list[str]:
    exe = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which(
        "pre-commit"
    )
    if exe is None:
        pytest.fail("pre-commit is not installed (it is in the `dev` extra)")
    return [exe]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.mark.slow
def test_hooks_with_pre_commit_try_repo(tmp_path: Path) -> None:
    repo = tmp_path / "user-project"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "dev@example.com")
    _git(repo, "config", "user.name", "dev")
    (repo / "train.py").write_text(LEGACY_TRAINER)
    (repo / "README.md").write_text("not python\n")
    # The hooks read the project's configuration like the CLI does.
    (repo / "pyproject.toml").write_text('[tool.tpulint]\nselect = ["TPU001"]\n')
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "init")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "NO_COLOR": "1"}

    def try_repo(hook: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*_pre_commit(), "try-repo", str(ROOT), hook, "--all-files", "--verbose"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )

    check = try_repo("tpulint-check")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "train.py:3:21: TPU001" in check.stdout
    fix = try_repo("tpulint-fix")
    assert fix.returncode == 1, fix.stdout + fix.stderr  # files were modified
    assert (repo / "train.py").read_text() == LEGACY_TRAINER.replace(
        "tpu_cores=8", 'accelerator="tpu", devices=8'
    )
    again = try_repo("tpulint-check")
    assert again.returncode == 0, again.stdout + again.stderr


@pytest.mark.slow
def test_readme_local_hooks_work_as_written(tmp_path: Path) -> None:
    """The README's `repo: local` snippet, copied as is, with the installed tpulint on PATH
    (an activated environment)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- pre-commit-local -->", 1)[1].split("<!-- /pre-commit-local -->")[0]
    snippet = block.split("```yaml\n", 1)[1].split("```", 1)[0]
    repo = tmp_path / "user-project"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "dev@example.com")
    _git(repo, "config", "user.name", "dev")
    (repo / ".pre-commit-config.yaml").write_text(snippet)
    (repo / "train.py").write_text(LEGACY_TRAINER)
    (repo / "pyproject.toml").write_text('[tool.tpulint]\nselect = ["TPU001"]\n')
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "init")
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "NO_COLOR": "1",
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
    }

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*_pre_commit(), "run", "--all-files"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    first = run()
    assert first.returncode == 1, first.stdout + first.stderr  # the fix hook changed train.py
    assert "tpulint fix" in first.stdout and "Failed" in first.stdout
    assert (repo / "train.py").read_text() == LEGACY_TRAINER.replace(
        "tpu_cores=8", 'accelerator="tpu", devices=8'
    )
    second = run()
    assert second.returncode == 0, second.stdout + second.stderr
    assert second.stdout.count("Passed") == 2
