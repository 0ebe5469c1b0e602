"""`verify --compare` checks that the fixed module trains the same, and `fix --prove` applies
only the rewrites that do.

Scenarios (each trains once per run it needs, on 8 emulated cores):
* exact rewrites of a module with dropout and random augmentation: equivalent (2 runs);
* a rewrite made wrong on purpose (the masked mean divided by every element): not
  equivalent, and the report names the rewrite (2 runs);
* the per-step losses kept on the device without rewriting the epoch-end code that averages
  them: the training is the same, the module's state at the end of the epoch is not (a
  tensor where a float was), and the report names the attribute (2 runs);
* `fix --prove` on a copy of the file with that wrong rewrite: the exact rewrite is applied,
  the wrong one refused, the other class's rewrites (never run by this training) left alone
  (4 runs: as written, all, the suspect alone, the rest).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tpulint.runtime import compare
from tpulint.runtime.api import DEFAULT_EPOCHS
from tpulint.runtime.judge.render import render_compare
from tpulint.runtime.judge.report import CompareReport
from tpulint.runtime.prove import ProveReport, prove
from verify_helpers import CORES, ROOT, target

pytestmark = pytest.mark.runtime

FILE = "tests/runtime/targets/equivalence.py"
SOURCE = (ROOT / FILE).read_text()
LINES = SOURCE.splitlines()
CE_LINE = LINES.index("        loss = F.cross_entropy(logits[labeled], labels[labeled])") + 1
RUNNING_LINE = CE_LINE + 2  # NoisyMaskedModel's `self.running = ... loss.item()`
MEAN_LINE = LINES.index("        loss = loss[labeled].mean()") + 1  # WrongRewriteModel's
ITEM_LINE = MEAN_LINE + 1


def _wrong_mean() -> pytest.MonkeyPatch:
    """Make the masked-mean rewrite divide by every element instead of the mask's count: the
    rewrite is then not exact whenever a batch has an unlabeled sample."""
    from tpulint.rules.rewrite.expressions import atom
    from tpulint.rules.rewrite.masks import MaskForm

    patch = pytest.MonkeyPatch()
    patch.setattr(MaskForm, "count", property(lambda self: f"{atom(self.ctx, self.base)}.numel()"))
    return patch


@pytest.fixture(scope="module")
def exact(xla: None, timed) -> CompareReport:
    return timed(
        "--compare, exact rewrites (dropout, augmentation)",
        compare,
        target("equivalence.py:NoisyMaskedModel"),
        cores=CORES,
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def wrong(xla: None, timed) -> Iterator[CompareReport]:
    patch = _wrong_mean()
    try:
        report = timed(
            "--compare, a wrong rewrite",
            compare,
            target("equivalence.py:WrongRewriteModel"),
            cores=CORES,
            cwd=ROOT,
        )
    finally:
        patch.undo()  # before the next scenario's fixes are made
    yield report


@pytest.fixture(scope="module")
def readers_left_alone(xla: None, timed) -> Iterator[CompareReport]:
    """The rewrite tpulint made before values collected for the epoch end were deferred with
    their readers: the step keeps its losses on the device, the epoch-end code that averages
    them is left alone (it then averages tensors)."""
    from tpulint.rules.rewrite import deferral

    patch = pytest.MonkeyPatch()
    patch.setattr(deferral, "_rewrite_read", lambda *args, **kwargs: None)
    try:
        report = timed(
            "--compare, a producer rewritten without its reader",
            compare,
            target("equivalence.py:NoisyMaskedModel"),
            cores=CORES,
            cwd=ROOT,
        )
    finally:
        patch.undo()  # before the next scenario's fixes are made
    yield report


@pytest.fixture(scope="module")
def proven(xla: None, timed, tmp_path_factory: pytest.TempPathFactory) -> tuple[ProveReport, Path]:
    project = tmp_path_factory.mktemp("prove")
    shutil.copy(ROOT / FILE, project / "model.py")
    patch = _wrong_mean()
    try:
        report = timed(
            "fix --prove, one wrong rewrite",
            prove,
            "model.py:WrongRewriteModel",
            apply=True,
            cwd=str(project),
            cores=CORES,
        )
    finally:
        patch.undo()
    return report, project / "model.py"


def test_exact_rewrites_train_the_same(exact: CompareReport) -> None:
    assert exact.original.error is None and exact.fixed.error is None
    equivalence = exact.equivalence
    assert equivalence is not None and equivalence.equivalent
    # 512 samples, 8 cores, batches of 8: 8 steps per epoch.
    assert equivalence.steps == 8 * DEFAULT_EPOCHS
    assert 0 <= equivalence.max_relative_difference <= equivalence.tolerance == 1e-4
    assert equivalence.parameters == 4  # two Linear layers: weights and biases
    # The state at the end of every epoch: `losses` (emptied), `epoch_losses`, `lr`, per core.
    assert equivalence.states >= 3 * DEFAULT_EPOCHS * 8
    codes = sorted((f["code"], f["line"]) for f in equivalence.rewrites)
    assert ("TPU202", CE_LINE) in codes and ("TPU101", RUNNING_LINE) in codes
    # WrongRewriteModel's rewrites are in the file too, but this training never runs them.
    assert {(f["code"], f["line"]) for f in equivalence.not_run} == {
        ("TPU202", MEAN_LINE),
        ("TPU101", ITEM_LINE),
    }
    assert exact.fixed.verdict == "pass" and exact.exit_code == 0


def test_exact_rewrites_report(exact: CompareReport) -> None:
    text = render_compare(exact)
    line = next(x for x in text.splitlines() if x.startswith("Equivalence: "))
    steps = 8 * DEFAULT_EPOCHS
    assert line.startswith(f"Equivalence: equivalent over {steps} steps, max relative difference ")
    assert "(tolerance 1e-04)" in line
    data = json.loads(exact.to_json_text())["equivalence"]
    assert data["equivalent"] is True and data["steps"] == steps
    assert data["first_difference"] is None
    assert isinstance(data["max_relative_difference"], float)


def test_a_wrong_rewrite_is_caught_and_named(wrong: CompareReport) -> None:
    equivalence = wrong.equivalence
    assert equivalence is not None and not equivalence.equivalent
    first = equivalence.first_difference
    assert first is not None and first.step == 0 and first.quantity == "loss"
    assert first.rewrite == {"path": FILE, "line": MEAN_LINE, "code": "TPU202"}
    assert wrong.verdict == "fail" and wrong.exit_code == 1
    text = render_compare(wrong)
    assert f"first differing rewrite {FILE}:{MEAN_LINE} TPU202" in text
    assert "not equivalent from step 0: loss " in text
    data = json.loads(wrong.to_json_text())["equivalence"]
    assert data["equivalent"] is False
    assert data["first_difference"]["step"] == 0
    assert data["first_difference"]["rewrite"]["line"] == MEAN_LINE
    assert len(data["first_difference"]["values"]) == 2


def test_a_producer_rewritten_without_its_reader_is_caught(
    readers_left_alone: CompareReport,
) -> None:
    """The training is the same, but the module ends each epoch with a tensor where it had a
    float: not equivalent, and the report names the attribute."""
    equivalence = readers_left_alone.equivalence
    assert equivalence is not None and not equivalence.equivalent
    first = equivalence.first_difference
    assert first is not None and first.step is None and first.epoch == 0
    assert first.quantity == "state module attribute `epoch_losses[0]`"
    assert str(first.original).startswith("float ")
    assert first.fixed == "Tensor (xla, float32, [])"
    assert first.rewrite == {"path": FILE, "line": RUNNING_LINE, "code": "TPU101"}
    text = render_compare(readers_left_alone)
    assert (
        "not equivalent at the end of epoch 0: module attribute `epoch_losses[0]` is float" in text
    )
    assert "as written, Tensor (xla, float32, []) rewritten" in text
    data = json.loads(readers_left_alone.to_json_text())["equivalence"]
    assert data["first_difference"]["epoch"] == 0


def test_prove_applies_the_exact_rewrite_and_refuses_the_wrong_one(
    proven: tuple[ProveReport, Path],
) -> None:
    report, path = proven
    assert report.error is None
    assert [(r.first.code, r.first.start.line) for r in report.applied] == [("TPU101", ITEM_LINE)]
    assert [(r.first.code, r.first.start.line) for r, _ in report.refused] == [
        ("TPU202", MEAN_LINE)
    ]
    assert "not equivalent from step 0: loss" in report.refused[0][1]
    # NoisyMaskedModel's rewrites: this training never runs them, so they are not applied.
    assert {r.first.code for r in report.not_run} == {"TPU101", "TPU202"}
    assert report.written == ["model.py"] and report.exit_code == 1
    written = path.read_text()
    assert written.count("loss.detach()") == 1  # WrongRewriteModel's, only
    assert "        loss = loss[labeled].mean()\n" in written  # refused: as written
    assert "F.cross_entropy(logits[labeled], labels[labeled])" in written  # not run
    # As written, all rewrites, the suspect alone, then the rest.
    assert len(report.trials) == 3
    text = report.render()
    assert "Refused (the training differs with it):" in text
    assert f"model.py:{MEAN_LINE} TPU202" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--prove", "model.py:M"], "--prove checks unsafe fixes: add --unsafe-fixes"),
        (
            ["--prove", "model.py:M", "--unsafe-fixes", "model.py"],
            "--prove works on the files of TARGET (its module and DataModule); give no PATHS",
        ),
        (["--prove", "nowhere.py:M", "--unsafe-fixes"], "--prove: bad target `nowhere.py:M`"),
    ],
)
def test_prove_option_errors(args: list[str], message: str, tmp_path: Path) -> None:
    """Bad --prove options: one line, exit 2, before anything trains (a real subprocess)."""
    import subprocess
    import sys

    (tmp_path / "model.py").write_text("x = 1\n")
    result = subprocess.run(
        [sys.executable, "-m", "tpulint", "fix", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"tpulint: error: {message}"), result.stderr
    assert result.stdout == ""
