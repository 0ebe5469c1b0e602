"""Targets verify cannot run exit 2 with one clear line; the traceback only with -v."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from click.testing import CliRunner
from tpulint.runtime import verify
from tpulint.runtime.command import verify_command
from tpulint.runtime.environment import installed_version
from tpulint.runtime.judge.report import VerifyReport
from verify_helpers import ROOT, VERIFY, target

# Not "not installed: pip install pytorch-lightning" (lightning-bolts 0.7 under Lightning 2).
PL_VERSION = installed_version("pytorch-lightning")
PL_MAJOR = (PL_VERSION or "?").split(".")[0]


def _error(report: VerifyReport) -> str:
    assert report.verdict == "error" and report.exit_code == 2, report.summary
    assert report.error and "\n" not in report.error
    return report.error


# --- found without starting a child (no torch_xla needed) ---------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("model", "expected `package.module:Class` or `path/to/file.py:Class`"),
        (target("missing.py:Model"), "no such file: tests/runtime/targets/missing.py"),
        ("tpulint_no_such_package.models:Model", "no module named `tpulint_no_such_package`"),
        (target("clean.py:Clean-Model"), "`Clean-Model` is not a Python name"),
    ],
)
def test_malformed_or_missing_targets(spec: str, expected: str) -> None:
    report = verify(spec, cwd=ROOT)
    assert expected in _error(report)
    assert report.wall_seconds < 5  # no child was started


def test_bad_init_args() -> None:
    report = verify(target("clean.py:CleanModel"), init_args="[1, 2]", cwd=ROOT)
    assert "--init-args must be a JSON object" in _error(report)
    report = verify(target("clean.py:CleanModel"), init_args="{lr: 1}", cwd=ROOT)
    assert "--init-args is not valid JSON" in _error(report)


# --- found by the child, which imports the user's code ------------------------------------

UNUSABLE = {
    "not-a-lightningmodule": (
        target("not_lightning.py:PlainModule"),
        "`tests/runtime/targets/not_lightning.py:PlainModule` is not a LightningModule"
        " (its bases: Module)",
    ),
    "no-such-class": (
        target("clean.py:CleanModl"),
        "tests/runtime/targets/clean.py has no `CleanModl`; did you mean `CleanModel`?",
    ),
    "no-train-dataloader": (
        target("no_dataloader.py:NoDataModel"),
        "no train dataloader: NoDataModel defines no train_dataloader(); pass the DataModule"
        " that provides it with --datamodule module:Class",
    ),
    "factory-returns-dict": (
        target("factory.py:make_nothing"),
        "`tests/runtime/targets/factory.py:make_nothing` returned a dict, not a LightningModule",
    ),
    "import-error": (
        target("import_error.py:Unreachable"),
        "importing tests/runtime/targets/import_error.py failed: ModuleNotFoundError: No module"
        " named 'tpulint_test_missing_dependency' (tests/runtime/targets/import_error.py:4)",
    ),
    "lightning-1-library": (
        target("lightning1_import.py:UsesLightning1Library"),
        "tests/runtime/targets/lightning1_import.py imports"
        " `pytorch_lightning.utilities.apply_func`"
        " (at tests/runtime/targets/lightning1_library.py:4),"
        f" which pytorch_lightning {PL_VERSION} does not have: the code is written for another"
        f" Lightning version; use a release of it made for pytorch_lightning {PL_MAJOR}.x, or the"
        " pytorch_lightning version it was written for",
    ),
}


def _verify_all_at_once() -> dict[str, Any]:
    # Each of these runs is almost all the child importing torch and Lightning, so they run
    # side by side (which also shows concurrent verify runs keep to their own processes).
    with ThreadPoolExecutor(max_workers=len(UNUSABLE) + 1) as pool:
        futures = {
            name: pool.submit(verify, spec, cwd=ROOT) for name, (spec, _) in UNUSABLE.items()
        }
        futures["subprocess"] = pool.submit(
            subprocess.run,
            [*VERIFY, target("import_error.py:Unreachable")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
        )
        return {name: future.result() for name, future in futures.items()}


@pytest.fixture(scope="module")
def unusable(xla: None, timed) -> dict[str, Any]:
    label = f"{len(UNUSABLE)} bad targets and 1 subprocess, concurrently"
    return timed(label, _verify_all_at_once)


@pytest.mark.runtime
@pytest.mark.parametrize("name", list(UNUSABLE))
def test_unusable_targets(name: str, unusable: dict[str, Any]) -> None:
    report = unusable[name]
    assert _error(report) == UNUSABLE[name][1]
    assert report.run["status"] == "error"


@pytest.mark.runtime
def test_import_error_keeps_the_users_traceback_for_verbose(unusable: dict[str, Any]) -> None:
    detail = unusable["import-error"].error_detail
    assert detail.startswith("Traceback (most recent call last):")
    assert 'import_error.py", line 4, in <module>' in detail


@pytest.mark.runtime
def test_import_error_in_a_real_subprocess(unusable: dict[str, Any]) -> None:
    run = unusable["subprocess"]
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr == f"tpulint: error: {UNUSABLE['import-error'][1]}\n"


def test_verbose_prints_the_detail(monkeypatch: pytest.MonkeyPatch) -> None:
    from tpulint.runtime import api
    from tpulint.runtime.judge.analysis import Settings, base_report, error_report
    from tpulint.runtime.spec import RunSpec, TargetRef

    canned = error_report(
        base_report(RunSpec(TargetRef("x.py:M", "file", "/x.py", "M")), Settings(), None),
        "importing x.py failed: NameError: name 'y' is not defined (x.py:3)",
        'Traceback (most recent call last):\n  File "x.py", line 3, in <module>\nNameError\n',
    )
    monkeypatch.setattr(api, "verify", lambda *args, **kwargs: canned)
    quiet = CliRunner().invoke(verify_command, ["x.py:M"])
    assert quiet.exit_code == 2
    assert quiet.stderr == f"tpulint: error: {canned.error}\n"
    verbose = CliRunner().invoke(verify_command, ["x.py:M", "-v"])
    assert verbose.exit_code == 2
    lines = verbose.stderr.splitlines()
    assert lines[0] == f"tpulint: error: {canned.error}"
    assert lines[1:] == canned.error_detail.rstrip().splitlines()
