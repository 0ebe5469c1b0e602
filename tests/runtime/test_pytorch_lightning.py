"""Modules written against the standalone `pytorch_lightning` package train with its own Trainer
(here built by its LightningCLI from a fixed-class config: plain keys, TARGET is the class);
without the package, one line says what to install."""

from __future__ import annotations

import sys

import pytest
from tpulint.runtime import verify
from tpulint.runtime.errors import VerifyError
from tpulint.runtime.judge.render import render
from tpulint.runtime.judge.report import VerifyReport
from tpulint.runtime.spec import TargetRef
from verify_helpers import CORES, ROOT, emulate, target


@pytest.fixture(scope="module")
def report(xla: None, timed, layout: str) -> VerifyReport:
    return timed(
        f"pytorch_lightning module, fixed-class --config (API, {layout})",
        verify,
        target("pl_module.py:PLModel"),
        datamodule=target("pl_module.py:PLData"),
        config="tests/runtime/targets/pl_fixed.yaml",
        cores=CORES,
        emulate=emulate(layout),
        cwd=ROOT,
    )


@pytest.mark.runtime
def test_trained_with_the_pytorch_lightning_trainer(report: VerifyReport) -> None:
    assert report.error is None, report.error_detail
    assert report.verdict == "pass", report.summary
    assert report.trainer["package"] == "pytorch_lightning"
    assert report.trainer["class"] == "pytorch_lightning.trainer.trainer.Trainer"
    assert report.trainer["used"]["accelerator"] == (
        "<tpulint.runtime.child.accelerator.EmulatedTPUAccelerator_pytorch_lightning>"
    )
    assert report.backend["versions"]["pytorch_lightning"].startswith("2.")
    assert report.backend["strategy"] == "XLAStrategy"
    assert report.checks["sharding"].status == "pass"
    assert {c.sampler for e in report.shards for c in e.cores} == {"DistributedSampler"}
    assert "  pytorch_lightning.Trainer(gradient_clip_val=1.0)" in render(report).splitlines()


@pytest.mark.runtime
def test_the_fixed_class_config_reached_model_and_data(report: VerifyReport) -> None:
    assert report.init_args == {"lr": 0.2}
    assert report.datamodule_args == {"size": 512, "batch_size": 8}
    assert report.checks["batch_geometry"].details["per_core_batch"] == 8
    assert report.trainer["requested"] == {"gradient_clip_val": 1.0}
    assert report.model_class == "pl_module.PLModel"


def test_a_missing_pytorch_lightning_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tpulint.runtime.child import flavour, targets

    monkeypatch.setitem(sys.modules, "pytorch_lightning", None)  # as if not installed
    monkeypatch.setattr(sys, "path", list(sys.path))
    ref = TargetRef.parse(target("pl_module.py:PLModel"), cwd=str(ROOT))
    with pytest.raises(VerifyError) as error:
        targets.import_target_module(ref)
    assert error.value.message == (
        "tests/runtime/targets/pl_module.py imports `pytorch_lightning`, which is not installed:"
        " pip install pytorch-lightning (verify trains modules written against it with its own"
        " Trainer)"
    )
    with pytest.raises(VerifyError, match="which is not installed: pip install pytorch-lightning"):
        flavour.flavour("pytorch_lightning")


def test_the_package_is_read_from_the_bases_without_importing() -> None:
    from tpulint.runtime.child.flavour import package_of

    def lightning_class(module: str) -> type:
        return type("LightningModule", (), {"__module__": module})

    mine = type("Mine", (lightning_class("pytorch_lightning.core.module"),), {})
    assert package_of(mine) == "pytorch_lightning"
    assert package_of(mine()) == "pytorch_lightning"
    assert package_of(type("Mine", (lightning_class("lightning.pytorch.core.module"),), {})) == (
        "lightning"
    )
    assert package_of(object) is None
