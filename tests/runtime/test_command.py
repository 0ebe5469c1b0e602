"""The click command: a light import, documented defaults, one-line errors."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner
from tpulint.runtime import api, environment
from tpulint.runtime.command import verify_command
from verify_helpers import ROOT, target


def test_import_is_light() -> None:
    # tpulint/cli.py registers the command lazily; importing it must not pull in torch,
    # torch_xla, lightning, or the rest of verify.
    code = (
        "import sys; from tpulint.runtime.command import verify_command; "
        "heavy = [m for m in ('torch', 'torch_xla', 'lightning', 'libcst', "
        "'tpulint.runtime.api', 'tpulint.engine.source') if m in sys.modules]; "
        "print(heavy); assert verify_command.name == 'verify'"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_help_lists_the_options_and_api_defaults() -> None:
    result = CliRunner().invoke(verify_command, ["--help"])
    assert result.exit_code == 0
    for option in (
        "--cores",
        "--steps",
        "--warmup",
        "--epochs",
        "--datamodule",
        "--init-args",
        "--json",
        "--compare",
        "--batch-multiple",
        "--timeout",
        "--verbose",
        "--quiet",
    ):
        assert option in result.output
    text = " ".join(result.output.split())
    assert f"[default: {api.DEFAULT_STEPS}]" in text
    assert f"[default: {api.DEFAULT_WARMUP}]" in text
    assert f"[default: {api.DEFAULT_EPOCHS}]" in text
    assert f"[default: {api.DEFAULT_TIMEOUT:.0f}]" in text
    assert "8 emulated]" in text and environment.EMULATED_DEFAULT_CORES == 8


def test_missing_torch_xla_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    real = environment.importlib.util.find_spec
    monkeypatch.setattr(
        environment.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torch_xla" else real(name, *a),
    )
    result = CliRunner().invoke(verify_command, [target("clean.py:CleanModel")])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "tpulint: error: verify needs torch_xla, which is not installed:"
        " pip install 'tpulint[xla]'\n"
    )


def test_other_torch_xla_versions_are_refused_when_emulating(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        environment, "installed_version", lambda name: "2.8.1" if name == "torch_xla" else "1.0"
    )
    monkeypatch.setenv("PJRT_DEVICE", "CPU")
    result = CliRunner().invoke(verify_command, [target("clean.py:CleanModel")])
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "tpulint: error: TPU emulation on CPU supports torch_xla 2.9.x only, found 2.8.1"
    )


def test_bad_target_error_is_one_line_even_with_json() -> None:
    result = CliRunner().invoke(verify_command, ["no-colon", "--json"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("tpulint: error: bad target")
    assert '"verdict": "error"' in result.stdout


def test_batch_multiple_comes_from_the_project_config(tmp_path, monkeypatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.tpulint]\nbatch-multiple = 128\n")
    assert api.default_batch_multiple(str(tmp_path)) == 128
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(verify_command, ["no-colon", "--json"])
    assert '"batch_multiple": 128' in result.stdout
    (tmp_path / "pyproject.toml").write_text("[tool.tpulint]\nbatch-multiple = 'x'\n")
    result = CliRunner().invoke(verify_command, ["no-colon"])
    assert result.exit_code == 2
    assert result.stderr.startswith("tpulint: error: pyproject.toml: [tool.tpulint]")
