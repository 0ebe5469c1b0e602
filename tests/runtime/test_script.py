"""The user's own script and the user's own run.

`verify --script` runs a training script as `python train.py ...` would (argparse,
LightningCLI), with verify's limits and recording: the same verdict as the module it wraps.
`TPUReadiness` records a run from inside it, one set of files per core, and `tpulint report`
judges them with verify's judge: a BoringModel passes, the same model with a boolean-mask
loss fails at that line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tpulint.runtime import verify
from tpulint.runtime.judge.report import VerifyReport
from tpulint.runtime.recorded import report_directory
from verify_helpers import CORES, ROOT, THREADS, VERIFY, child_processes, emulate

pytestmark = pytest.mark.runtime

SCRIPTS = "tests/runtime/targets/scripts"
MASK_LINE = 27  # boolean_mask.py: loss = F.cross_entropy(logits[labeled], labels[labeled])
BORING_MASK_LINE = 19  # boring.py: loss = out[out > 0].sum()


@pytest.fixture(scope="module")
def masked_script(xla: None, timed) -> VerifyReport:
    return timed(
        "--script around the boolean-mask module, argparse (API)",
        verify,
        None,
        script=f"{SCRIPTS}/train_mask.py",
        script_args=["--epochs", "2"],
        cores=CORES,
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def cli_script(xla: None, timed) -> VerifyReport:
    return timed(
        "--script main.py -- fit --config config.yaml, LightningCLI (API)",
        verify,
        None,
        script="main.py",
        script_args=["fit", "--config", "config.yaml"],
        cores=CORES,
        cwd=ROOT / "examples" / "lightning_cli",
    )


@pytest.fixture(scope="module")
def recorded(xla: None, timed, tmp_path_factory) -> dict[str, tuple[VerifyReport, Path]]:
    """The BoringModel script with TPUReadiness, as is and with a boolean-mask loss."""
    found = {}
    for name, extra in (("boring", []), ("masked", ["--masked"])):
        directory = tmp_path_factory.mktemp(f"readiness-{name}")
        report = timed(
            f"--script boring.py with TPUReadiness{' --masked' if extra else ''} (API)",
            verify,
            None,
            script=f"{SCRIPTS}/boring.py",
            script_args=["--record", str(directory), *extra],
            cores=CORES,
            cwd=ROOT,
        )
        found[name] = (report, directory)
    return found


def test_a_script_gets_the_verdict_of_the_module_it_wraps(masked_script: VerifyReport) -> None:
    report = masked_script
    assert report.error is None, report.error_detail
    # what test_boolean_mask.py finds for boolean_mask.py:MaskedLossModel as a module target
    assert report.verdict == "fail" and report.exit_code == 1
    assert report.checks["compile_stability"].status == "fail"
    cause = next(c for c in report.causes if c.severity == "fail")
    assert cause.kind in ("data_dependent_shape", "diverged_replicas")
    assert str(cause.location) == f"tests/runtime/targets/boolean_mask.py:{MASK_LINE}"
    assert "TPU202" in cause.codes
    assert report.checks["sharding"].status == "pass"
    assert report.model_class == "boolean_mask.MaskedLossModel"
    # the script's Trainer got verify's settings; its own arguments are reported
    assert report.trainer["requested"]["max_epochs"] == 2
    assert report.trainer["used"]["devices"] == CORES


def test_a_lightning_cli_script_gets_the_verdict_of_its_config(cli_script: VerifyReport) -> None:
    report = cli_script
    assert report.error is None, report.error_detail
    # what test_cli_config.py finds for `verify --config config.yaml` in that folder
    assert report.verdict == "pass", report.summary
    assert report.model_class == "model.Classifier"
    assert report.datamodule_class == "model.RandomImages"
    assert report.checks["sharding"].status == "pass"
    assert report.checks["compile_stability"].status == "pass"
    assert report.trainer["requested"]["precision"] == "bf16-true"
    overridden = {o["name"]: o for o in report.trainer["overridden"]}
    assert overridden["precision"]["used"] == "32-true"  # emulated: what actually ran
    assert "float32" in overridden["precision"]["reason"]
    # batch geometry follows the dtype a TPU runs: bf16 fills a tile with 16 rows
    assert report.checks["batch_geometry"].details["batch_multiple"] == 16


def test_readiness_leaves_one_set_of_files_per_core(recorded) -> None:
    report, directory = recorded["boring"]
    assert report.error is None, report.error_detail
    assert report.verdict == "pass", report.summary
    ranks = sorted(p.name for p in directory.glob("rank-*.jsonl"))
    assert ranks == [f"rank-{r:05d}.jsonl" for r in range(CORES)]
    for rank in range(CORES):
        assert list(directory.glob(f"plan-r{rank}-train-*.bin")), rank


def test_report_judges_the_recorded_run(recorded) -> None:
    _, directory = recorded["boring"]
    report = report_directory(directory)
    assert report.error is None, report.error_detail
    assert report.verdict == "pass", report.summary
    assert report.run["status"] == "finished"
    assert report.checks["sharding"].status == "pass"
    assert report.checks["compile_stability"].status == "pass"
    assert report.backend["cores"] == CORES
    # TPUReadiness carries verify's memory probe: the same estimate of core 0's first step
    assert report.checks["memory"].status == "pass"
    assert report.memory["recorded"]["epoch"] == 0 and report.memory["recorded"]["batch_idx"] == 0
    assert report.memory["estimated_bytes_per_core"] > 0
    run = subprocess.run(
        [*VERIFY[:-1], "report", str(directory), "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("verdict: PASS (exit 0): pass")


def test_report_fails_a_boolean_mask_at_its_line(recorded) -> None:
    verified, directory = recorded["masked"]
    assert verified.verdict == "fail"
    report = report_directory(directory)
    assert report.verdict == "fail" and report.exit_code == 1, report.summary
    cause = next(c for c in report.causes if c.severity == "fail")
    assert str(cause.location) == f"{SCRIPTS}/boring.py:{BORING_MASK_LINE}"
    assert "TPU202" in cause.codes
    run = subprocess.run(
        [*VERIFY[:-1], "report", str(directory), "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1
    assert f"boring.py:{BORING_MASK_LINE}" in run.stdout


def test_bad_scripts_are_one_line(tmp_path: Path) -> None:
    none = tmp_path / "nothing.py"
    none.write_text("print('no trainer here')\n")
    report = verify(None, script=str(none), cwd=tmp_path, cores=2)
    assert report.verdict == "error"
    assert (
        report.error == "nothing.py built no Lightning Trainer: verify trains what the"
        " script's Trainer fits (`Trainer(...).fit(model)`, or LightningCLI)"
    )
    # an argument parser's complaint (printed to stderr before it exits) is the line's reason
    usage = tmp_path / "usage.py"
    usage.write_text("import argparse\nargparse.ArgumentParser().parse_args()\n")
    report = verify(None, script=str(usage), script_args=["--epocs", "2"], cwd=tmp_path, cores=2)
    assert report.error == (
        "usage.py exited with status 2 before training: its argument parser said:"
        " usage.py: error: unrecognized arguments: --epocs 2"
    )
    missing = verify(None, script="missing.py", cwd=tmp_path)
    assert missing.error == "--script missing.py: no such file"
    both = verify("clean.py:CleanModel", script=str(none), cwd=tmp_path)
    assert both.error.startswith("--script runs your script as it is; TARGET cannot")


_STREAM_SCRIPT = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        return self.net(batch[0]).pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def batches():
    for _ in range(8):
        yield (torch.randn(8, 4),)


class Stream:  # an iterable over a generator, as gluonts's training loader is
    def __init__(self):
        self.batches = batches()

    def __iter__(self):
        return self.batches


trainer = L.Trainer(accelerator="tpu", devices="auto", max_epochs=1)
trainer.fit(Model(), train_dataloaders=Stream())
"""


@pytest.mark.runtime
def test_a_launcher_error_says_where_it_was_raised(xla: None, tmp_path: Path, layout: str) -> None:
    """fit's own arguments go to the cores' processes by pickle (Lightning's XLA launcher ->
    xmp.spawn's process pool, on a TPU VM too): a loader over a generator fails there, before
    any core runs. Not "no replica reported a fatal error": the library line, the user's fit
    call, and the traceback for -v (gluonts's `estimator.train()` does exactly this)."""
    script = tmp_path / "stream.py"
    script.write_text(_STREAM_SCRIPT)
    cores = 2 if layout == THREADS else CORES  # an emulated TPU VM takes 1 or all its cores
    report = verify(None, script=str(script), cwd=tmp_path, cores=cores, emulate=emulate(layout))
    assert report.verdict == "error" and report.exit_code == 2
    assert report.error == (
        "the run crashed: TypeError: cannot pickle 'generator' object (raised in `dumps`"
        " (multiprocessing/reduction.py:51) in the process that starts the cores, before any"
        " core ran a step; the last line of yours on its stack: stream.py:31 in <module>(); -v"
        " shows the traceback)"
    )
    assert "TypeError: cannot pickle 'generator' object" in (report.error_detail or "")
    assert 'stream.py", line 31' in (report.error_detail or "")


def test_no_process_survives(masked_script, cli_script, recorded) -> None:
    assert child_processes() == []
