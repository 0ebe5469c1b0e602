"""Options for the user's real run (--trainer-args, --datamodule-args, --config) and the numeric
options: bad input is one `tpulint: error:` line and exit 2, found before any child starts."""

from __future__ import annotations

import subprocess

import pytest
from click.testing import CliRunner
from tpulint.runtime import verify
from tpulint.runtime.command import verify_command
from tpulint.runtime.judge.report import VerifyReport
from tpulint.runtime.trainer_args import trainer_parameters
from verify_helpers import ROOT, VERIFY, target

CLEAN = target("clean.py:CleanModel")


def _error(report: VerifyReport) -> str:
    assert report.verdict == "error" and report.exit_code == 2, report.summary
    assert report.error and "\n" not in report.error
    assert report.wall_seconds < 5  # no child was started
    return report.error


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            {"trainer_args": "{accumulate_grad_batches: 4}"},
            "--trainer-args is not valid JSON: Expecting property name enclosed in double"
            " quotes (column 2)",
        ),
        (
            {"trainer_args": "[4]"},
            "--trainer-args must be a JSON object of keyword arguments,"
            ' e.g. \'{"precision": "bf16-true"}\'',
        ),
        ({"trainer_args": '{"": 1}'}, "--trainer-args: `` is not a keyword argument name"),
        (
            {"datamodule_args": "{", "datamodule": target("datamodule.py:RandomDataModule")},
            "--datamodule-args is not valid JSON: Expecting property name enclosed in double"
            " quotes (column 2)",
        ),
        (
            {"datamodule_args": '{"batch_size": 8}'},
            "--datamodule-args needs --datamodule (or a --config with `data:`)",
        ),
        ({"config": "missing.yaml"}, "--config missing.yaml: no such file"),
        ({"config": ["tests/runtime"]}, "--config tests/runtime: is a folder, not a config file"),
        ({"warmup": -1}, "--warmup must be at least 0, got -1"),
        ({"steps": 0}, "--steps must be at least 1, got 0"),
        ({"epochs": 0}, "--epochs must be at least 1, got 0"),
        ({"cores": 0}, "--cores must be at least 1, got 0"),
        ({"timeout": 0}, "--timeout must be positive, got 0"),
        ({"timeout": float("nan")}, "--timeout must be positive, got nan"),
        ({"batch_multiple": 0}, "--batch-multiple must be at least 1, got 0"),
    ],
)
def test_bad_options(options: dict, expected: str) -> None:
    assert _error(verify(CLEAN, cwd=ROOT, **options)) == expected


def test_unknown_trainer_argument_is_found_in_the_parent() -> None:
    if trainer_parameters("lightning") is None:
        pytest.skip("lightning is not installed")
    report = verify(CLEAN, trainer_args='{"acumulate_grad_batches": 4}', cwd=ROOT)
    assert _error(report) == (
        "--trainer-args: `acumulate_grad_batches` is not an argument of Trainer;"
        " did you mean `accumulate_grad_batches`?"
    )
    assert report.trainer["requested"] == {"acumulate_grad_batches": 4}


def test_a_target_or_a_config_is_needed() -> None:
    assert _error(verify(None, cwd=ROOT)) == (
        "no target: give TARGET (`package.module:Class` or `path/to/file.py:Class`), or a"
        " --config whose `model:` names its class_path"
    )
    result = CliRunner().invoke(verify_command, [])
    assert result.exit_code == 2
    assert result.stderr.startswith("tpulint: error: no target: give TARGET")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            "tests/runtime/targets:CleanModel",
            "bad target `tests/runtime/targets:CleanModel`: tests/runtime/targets is a folder, not"
            " a Python file; name the .py file that defines `CleanModel`"
            " (`tests/runtime/targets/FILE.py:CleanModel`)",
        ),
        (
            "tests/:Model",
            "bad target `tests/:Model`: tests/ is a package folder, not a Python file; name it as"
            " a module (`tests:Model`) or by its file (`tests/__init__.py:Model`)",
        ),
        (
            f"{ROOT}/tests:Model",
            f"bad target `{ROOT}/tests:Model`: {ROOT}/tests is a package folder, not a Python"
            f" file; name it as a module (`tests:Model`, run from {ROOT}) or by its file"
            f" (`{ROOT}/tests/__init__.py:Model`)",
        ),
    ],
)
def test_a_folder_given_as_the_target_file(spec: str, expected: str) -> None:
    assert _error(verify(spec, cwd=ROOT)) == expected


def test_compare_needs_a_target() -> None:
    result = CliRunner().invoke(verify_command, ["--compare", "--config", "x.yaml"])
    assert result.exit_code == 2
    assert result.stderr == (
        "tpulint: error: --compare needs TARGET: the file of the module is what `tpulint fix`"
        " rewrites\n"
    )


def test_help_lists_the_real_run_options() -> None:
    text = " ".join(CliRunner().invoke(verify_command, ["--help"]).output.split())
    for option in ("--trainer-args JSON", "--datamodule-args JSON", "--config FILE"):
        assert option in text
    assert "repeat to merge several in order" in text


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["--warmup", "-1", CLEAN], "tpulint: error: --warmup must be at least 0, got -1\n"),
        (
            [CLEAN, "--trainer-args", "{bad"],
            "tpulint: error: --trainer-args is not valid JSON: Expecting property name enclosed"
            " in double quotes (column 2)\n",
        ),
        (
            [CLEAN, "--config", "nope.yaml", "--config", "base.yaml"],
            "tpulint: error: --config nope.yaml: no such file\n",
        ),
    ],
)
def test_one_line_through_a_real_subprocess(arguments: list[str], expected: str) -> None:
    run = subprocess.run(
        [*VERIFY, *arguments], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr == expected
