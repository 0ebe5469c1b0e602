"""--trainer-args and --datamodule-args reach the run: the Trainer accumulates gradients and
limits the epoch as asked, the DataModule gets its arguments, and verify's own settings win
where the user's conflict, with the report saying what, and why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tpulint.runtime import api, verify
from tpulint.runtime.command import verify_command
from tpulint.runtime.judge.render import render
from tpulint.runtime.judge.report import VerifyReport
from verify_helpers import CORES, ROOT, target

TRAINER_ARGS = {
    "accumulate_grad_batches": 4,
    "limit_train_batches": 8,
    "gradient_clip_val": 0.5,
    "devices": 4,
    "accelerator": "gpu",
    "max_epochs": 50,
}


@pytest.fixture(scope="module")
def run(xla: None, timed, tmp_path_factory: pytest.TempPathFactory) -> tuple[VerifyReport, dict]:
    record = tmp_path_factory.mktemp("trainer-args") / "record.json"
    report = timed(
        "--trainer-args + --datamodule-args (API)",
        verify,
        target("counting.py:CountingModel"),
        init_args={"record": str(record)},
        datamodule=target("datamodule.py:RandomDataModule"),
        datamodule_args={"size": 1024, "batch_size": 8},
        trainer_args=TRAINER_ARGS,
        cores=CORES,
        cwd=ROOT,
    )
    assert report.error is None, report.error_detail
    return report, json.loads(Path(record).read_text())


@pytest.mark.runtime
def test_limit_train_batches_shapes_the_epochs(run: tuple[VerifyReport, dict]) -> None:
    report, _ = run
    # 1024 samples, 8 per core-batch on 8 cores: 16 batches per epoch, limited to 8
    assert report.shards[0].cores[0].batches == 16
    assert [(row.epoch, row.batch_idx) for row in report.steps] == [
        (epoch, batch) for epoch in (0, 1, 2) for batch in range(8)
    ]


@pytest.mark.runtime
def test_accumulation_and_clipping_reach_the_trainer(run: tuple[VerifyReport, dict]) -> None:
    _, record = run
    # 24 batches with accumulate_grad_batches=4: 6 optimizer steps
    assert record["batches"] == 24
    assert record["optimizer_steps"] == 6
    assert record["gradient_clip_val"] == 0.5


@pytest.mark.runtime
def test_datamodule_args_reach_the_datamodule(run: tuple[VerifyReport, dict]) -> None:
    report, record = run
    assert record["batch_size"] == 8
    assert report.checks["batch_geometry"].details["per_core_batch"] == 8
    assert [epoch.dataset_size for epoch in report.shards] == [1024, 1024, 1024]
    assert report.datamodule_args == {"size": 1024, "batch_size": 8}


@pytest.mark.runtime
def test_verify_settings_win_and_the_report_says_so(run: tuple[VerifyReport, dict]) -> None:
    report, record = run
    assert record["num_devices"] == CORES
    trainer = report.trainer
    assert trainer["package"] == "lightning"
    assert trainer["class"] == "lightning.pytorch.trainer.trainer.Trainer"
    assert trainer["requested"] == TRAINER_ARGS
    overridden = {o["name"]: (o["requested"], o["used"]) for o in trainer["overridden"]}
    assert overridden == {
        "devices": (4, CORES),
        "accelerator": ("gpu", "<tpulint.runtime.child.accelerator.EmulatedTPUAccelerator>"),
        "max_epochs": (50, 3),
    }
    assert all(o["reason"] for o in trainer["overridden"])
    used = trainer["used"]
    assert used["accumulate_grad_batches"] == 4 and used["limit_train_batches"] == 8
    assert used["callbacks"] == [
        "<tpulint silent progress bar>",
        "<tpulint.runtime.child.recorder.StepRecorder>",
        "<tpulint.runtime.child.memory.MemoryProbe>",
        "<tpulint.runtime.child.optimizers.OptimizerCheck>",
        "<tpulint.runtime.child.stand_ins.CallbackStandIns>",
    ]
    as_json = report.to_json()
    assert as_json["trainer"] == trainer and as_json["datamodule_args"] == report.datamodule_args


@pytest.mark.runtime
def test_the_text_report_lists_the_overrides(run: tuple[VerifyReport, dict]) -> None:
    lines = render(run[0]).splitlines()
    start = next(i for i, line in enumerate(lines) if "lightning.pytorch.Trainer(" in line)
    assert lines[start] == (
        "  lightning.pytorch.Trainer(accumulate_grad_batches=4, limit_train_batches=8,"
        " gradient_clip_val=0.5, devices=4, accelerator='gpu', max_epochs=50):"
        " verify's own settings won for"
    )
    assert lines[start + 1 : start + 4] == [
        "    accelerator='gpu' -> EmulatedTPUAccelerator: verify runs on the XLA backend it"
        " found (TPU cores, or PJRT CPU emulating them)",
        "    devices=4 -> 8: verify trains on --cores 8 (pass --cores to choose)",
        "    max_epochs=50 -> 3: --epochs sets the run's length",
    ]


def test_the_command_hands_the_options_to_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_verify(target: str | None, **options: Any) -> VerifyReport:
        seen.update(options, target=target)
        return VerifyReport(target=target, verdict="pass", summary="pass")

    monkeypatch.setattr(api, "verify", fake_verify)
    result = CliRunner().invoke(
        verify_command,
        [
            "--config",
            "a.yaml",
            "--config",
            "b.yaml",
            "--trainer-args",
            '{"precision": "bf16-true"}',
            "--datamodule-args",
            '{"batch_size": 8}',
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    assert seen["target"] is None
    assert seen["config"] == ["a.yaml", "b.yaml"]
    assert seen["trainer_args"] == '{"precision": "bf16-true"}'
    assert seen["datamodule_args"] == '{"batch_size": 8}'
