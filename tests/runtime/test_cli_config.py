"""--config: LightningCLI config files build the run exactly as the user's own
`python main.py fit --config base.yaml --config more.yaml` does. The same callback writes down
what it was built with in verify's run and in the user's CLI run (on the CPU, two steps), and
the two are compared; the files merge in order; verify's own settings win and are reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from tpulint.runtime import verify
from tpulint.runtime.judge.render import render
from tpulint.runtime.judge.report import VerifyReport
from verify_helpers import CORES, TARGETS

pytestmark = pytest.mark.runtime

PROJECT = TARGETS / "cli_project"  # the user's project: main.py, models.py, base.yaml


def _more_config(path: Path, snapshot: Path) -> Path:
    """The second config: overrides one model argument, adds the recording callback and a
    ModelCheckpoint (which verify keeps, writing no file)."""
    path.write_text(
        "model:\n"
        "  init_args:\n"
        "    hidden: 48\n"
        "trainer:\n"
        "  callbacks:\n"
        "    - class_path: models.Snapshot\n"
        "      init_args:\n"
        f"        out: {snapshot}\n"
        "    - class_path: lightning.pytorch.callbacks.ModelCheckpoint\n"
        "      init_args:\n"
        f"        dirpath: {path.parent / 'checkpoints'}\n"
    )
    return path


def _users_cli_run(tmp: Path) -> subprocess.CompletedProcess[str]:
    more = _more_config(tmp / "more-cli.yaml", tmp / "snapshot-cli.json")
    command = [
        sys.executable,
        "main.py",
        "fit",
        "--config",
        "base.yaml",
        "--config",
        str(more),
        "--data.init_args.batch_size=8",  # as --datamodule-args below
        # where the user's CPU run must differ from a TPU run, to be quick and leave no files
        "--trainer.accelerator=cpu",
        "--trainer.devices=1",
        "--trainer.fast_dev_run=2",
        "--trainer.logger=false",
        f"--trainer.default_root_dir={tmp / 'root'}",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PJRT_", "XLA_"))}
    return subprocess.run(
        command, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def runs(xla: None, timed, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("cli-config")
    more = _more_config(tmp / "more.yaml", tmp / "snapshot.json")

    def both() -> dict[str, Any]:
        with ThreadPoolExecutor(max_workers=2) as pool:
            verified = pool.submit(
                verify,
                None,
                config=["base.yaml", str(more)],
                datamodule_args={"batch_size": 8},
                cores=CORES,
                cwd=PROJECT,
            )
            cli = pool.submit(_users_cli_run, tmp)
            return {"report": verified.result(), "cli": cli.result()}

    result = timed("--config base.yaml --config more.yaml, and the user's CLI (API)", both)
    assert result["cli"].returncode == 0, result["cli"].stderr[-3000:]
    result["verify_snapshot"] = json.loads((tmp / "snapshot.json").read_text())
    result["cli_snapshot"] = json.loads((tmp / "snapshot-cli.json").read_text())
    result["more"] = str(more)
    return result


def test_the_config_run_trains(runs: dict[str, Any]) -> None:
    report: VerifyReport = runs["report"]
    assert report.error is None, report.error_detail
    assert report.verdict == "pass", report.summary
    assert len(report.steps) == 3 * 8  # 512 samples / 8 cores / batch 8, three epochs


def test_verify_builds_what_the_users_cli_builds(runs: dict[str, Any]) -> None:
    ours, theirs = runs["verify_snapshot"], runs["cli_snapshot"]
    same = (
        "model",
        "hparams",
        "datamodule",
        "data",
        "accumulate_grad_batches",
        "gradient_clip_val",
        "log_every_n_steps",
        "seed",
    )
    assert {k: ours[k] for k in same} == {k: theirs[k] for k in same}
    # several files merge in order, the data override on top: as LightningCLI does
    assert ours["hparams"]["hidden"] == 48 and ours["hparams"]["lr"] == 0.05
    assert ours["data"] == {"size": 512, "batch_size": 8}
    assert ours["seed"] == "1234" and ours["gradient_clip_val"] == 0.5
    # the user's callbacks from the config are there (the checkpoint callback writes no
    # file); a silent progress bar replaces the CLI's, and verify's recorders come last
    # (Lightning moves checkpoint callbacks to the end of the list)
    assert ours["callbacks"][0] == "Snapshot" and "ModelCheckpoint" in ours["callbacks"]
    assert set(ours["callbacks"]) == {
        "Snapshot",
        "ModelCheckpoint",
        "SilentProgressBar_lightning",
        "StepRecorder",
        "MemoryProbe",
        "OptimizerCheck",
        "CallbackStandIns",
    }
    assert "Snapshot" in theirs["callbacks"] and "ModelCheckpoint" in theirs["callbacks"]


def test_verify_settings_win_and_are_reported(runs: dict[str, Any]) -> None:
    report: VerifyReport = runs["report"]
    ours = runs["verify_snapshot"]
    assert ours["max_epochs"] == 3 and ours["num_devices"] == CORES
    overridden = [(o["name"], o["requested"], o["used"]) for o in report.trainer["overridden"]]
    assert overridden == [("max_epochs", 100, 3)]
    requested = report.trainer["requested"]
    assert requested["gradient_clip_val"] == 0.5 and requested["max_epochs"] == 100
    assert [c["class_path"] for c in requested["callbacks"]] == [
        "models.Snapshot",
        "lightning.pytorch.callbacks.ModelCheckpoint",
    ]
    text = render(report)
    assert "--config base.yaml --config" in text.splitlines()[0]
    assert "    max_epochs=100 -> 3: --epochs sets the run's length" in text
    assert "callbacks=ModelCheckpoint" not in text


def test_the_report_records_what_was_built(runs: dict[str, Any]) -> None:
    report: VerifyReport = runs["report"]
    assert report.target is None
    assert report.config == ["base.yaml", runs["more"]]
    assert report.model_class == "models.WideModel"
    assert report.datamodule_class == "models.RandomData"
    assert report.init_args == {"hidden": 48, "lr": 0.05}
    assert report.datamodule_args == {"size": 512, "batch_size": 8}
    assert report.to_json()["config"] == report.config


def test_the_config_optimizer_lost_on_tpu_is_reported(runs: dict[str, Any]) -> None:
    # The user's CPU run uses the config's `optimizer:` (Adam); on the XLA cores the launcher
    # pickles the module and LightningCLI's patched configure_optimizers is lost, so the
    # module's own (SGD, lr 0.05) trains: verify shows what the TPU run would do, and says why.
    assert (runs["cli_snapshot"]["optimizer"], runs["cli_snapshot"]["optimizer_lr"]) == (
        "Adam",
        0.003,
    )
    assert (runs["verify_snapshot"]["optimizer"], runs["verify_snapshot"]["optimizer_lr"]) == (
        "SGD",
        0.05,
    )
    cause = next(c for c in runs["report"].causes if c.kind == "config_optimizer_lost")
    assert cause.severity == "warn"
    assert "`optimizer: torch.optim.Adam`" in cause.message
    assert "WideModel's own configure_optimizers() runs instead" in cause.message


BAD_CONFIGS = {
    "unknown-key": (
        "trainer:\n  acumulate_grad_batches: 2\n",
        ["base.yaml"],
        "--config: Subcommand 'fit' does not accept option 'trainer.acumulate_grad_batches'",
    ),
    "bad-value": (
        "model:\n  init_args:\n    hidden: wide\n",
        ["base.yaml"],
        "--config: model: ('models.WideModel') hidden: Expected a <class 'int'>. Got value: wide",
    ),
    "no-model": (
        "trainer:\n  max_epochs: 3\n",
        [],
        "--config: no model: give TARGET (the LightningModule class), or a `model:` with a"
        " class_path in the config",
    ),
}


@pytest.fixture(scope="module")
def bad_configs(xla: None, timed, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("bad-configs")
    calls = {}
    for name, (text, before, _) in BAD_CONFIGS.items():
        path = tmp / f"{name}.yaml"
        path.write_text(text)
        calls[name] = [*before, str(path)]

    def all_at_once() -> dict[str, Any]:
        with ThreadPoolExecutor(max_workers=len(calls)) as pool:
            futures = {
                name: pool.submit(verify, None, config=files, cores=CORES, cwd=PROJECT)
                for name, files in calls.items()
            }
            return {name: future.result() for name, future in futures.items()}

    return timed(f"{len(calls)} bad --config files, concurrently", all_at_once)


@pytest.mark.parametrize("name", list(BAD_CONFIGS))
def test_bad_config_is_one_line(name: str, bad_configs: dict[str, Any]) -> None:
    report: VerifyReport = bad_configs[name]
    assert report.verdict == "error" and report.exit_code == 2
    assert report.error == BAD_CONFIGS[name][2]
