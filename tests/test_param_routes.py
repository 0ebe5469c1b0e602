"""A helper the steps share, taking the stage as a parameter that each step passes as a literal:
code under a test of it that the literal decides is reached only from the hooks that pass the
literal that makes the test true (tpulint.analysis.param_routes, ProjectModel routes)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from tpulint.analysis.param_routes import decide, live
from tpulint.config.settings import Config
from tpulint.engine.source import check_source

_HEAD = """\
import lightning as L
import torch
import torchmetrics


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 2)
        self.acc = torchmetrics.Accuracy(task="multiclass", num_classes=2)

"""

# `log` defaults to "train"; validation passes it by keyword, test by position.
_SHARED = (
    _HEAD
    + """\
    def compute_loss(self, batch, log="train"):
        x, y = batch
        logits = self.net(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
        acc = (logits.argmax(-1) == y).float().mean()
        if log == "val":
            self.log("val_acc", acc, sync_dist=True)
            self.acc.update(logits, y)
            print(acc.item())
        return loss

    def training_step(self, batch, batch_idx):
        return self.compute_loss(batch)

    def validation_step(self, batch, batch_idx):
        return self.compute_loss(batch, log="val")

    def test_step(self, batch, batch_idx):
        return self.compute_loss(batch, "val")
"""
)


def _found(source: str) -> list[tuple[str, int, str]]:
    return [
        (d.code, d.start.line, d.message)
        for d in check_source(textwrap.dedent(source), "model.py", Config())
    ]


def _codes(source: str) -> list[tuple[str, int]]:
    return [(code, line) for code, line, _ in _found(source)]


@pytest.mark.parametrize(
    ("test", "bindings", "truth"),
    [
        ('log == "val"', {"log": "train"}, False),
        ('log == "val"', {"log": "val"}, True),
        ('stage != "train"', {"stage": "train"}, False),
        ('"train" == stage', {"stage": "test"}, False),
        ("log_metrics", {"log_metrics": False}, False),
        ("not log_metrics", {"log_metrics": False}, True),
        ("mask is None", {"mask": None}, True),
        ("mask is not None", {"mask": None}, False),
        ('stage in ("val", "test")', {"stage": "train"}, False),
        ('stage not in ["val", "test"]', {"stage": "test"}, False),
        ('stage == "val" and self.flag', {"stage": "train"}, False),
        ('stage == "val" or self.flag', {"stage": "train"}, None),
        ('stage == "val" and self.flag', {"stage": "val"}, None),
        ("k > 2", {"k": 3}, None),  # not a shape it reads
        ("n == 2", {"n": 2}, True),
        ('log == "val"', {}, None),
        ('other == "val"', {"log": "val"}, None),
    ],
)
def test_decide(test: str, bindings: dict, truth: bool | None) -> None:
    assert decide(ast.parse(test, mode="eval").body, bindings) is truth


def test_live_needs_every_test_to_allow_it() -> None:
    conds = [('log == "val"', True), ("debug", False)]
    assert not live(conds, {"log": "train"})
    assert live(conds, {"log": "val"})
    assert live(conds, {})


def test_code_under_the_validation_literal_is_validation_code() -> None:
    found = _found(_SHARED)
    codes = [(code, line) for code, line, _ in found]
    # `sync_dist=True` where validation's default on_step is False: synced once per epoch
    assert ("TPU106", 18) not in codes
    # per-step work in validation stays, named for the hook that reaches it
    assert ("TPU101", 20) in codes and ("TPU110", 10) in codes
    for code, _, message in found:
        if code in ("TPU101", "TPU110"):
            assert "called from validation_step" in message


def test_the_training_literal_keeps_its_branch_reported() -> None:
    source = (
        _HEAD
        + """\
    def _step(self, batch, stage):
        loss = self.net(batch).sum()
        if stage != "train":
            self.log(f"{stage}_loss", loss, sync_dist=True)
            self.log(f"{stage}_step", loss, on_step=True, sync_dist=True)
            self._extra(loss)
        if stage == "train":
            self.log("train_loss", loss, sync_dist=True)
        return loss

    def _extra(self, loss):
        self.log("extra", loss, sync_dist=True)

    def training_step(self, batch, batch_idx):
        return self._step(batch, "train")

    def validation_step(self, batch, batch_idx):
        return self._step(batch, stage="val")
"""
    )
    found = _found(source)
    codes = [(code, line) for code, line, _ in found]
    assert ("TPU106", 15) not in codes  # validation's default: once per epoch
    assert ("TPU106", 16) in codes  # an explicit on_step=True logs every validation step
    assert ("TPU106", 19) in codes  # the training branch: every training step
    assert ("TPU106", 23) not in codes  # a helper only the validation branch calls
    assert [m for c, line, m in found if line == 16 and "from validation_step" in m]


@pytest.mark.parametrize("early_exit", [False, True])
def test_a_boolean_flag_each_step_passes(early_exit: bool) -> None:
    body = (
        "        if not log_metrics:\n            return loss\n"
        '        self.log("m", loss, sync_dist=True)\n'
        if early_exit
        else '        if log_metrics:\n            self.log("m", loss, sync_dist=True)\n'
    )
    source = (
        _HEAD
        + "    def shared(self, batch, log_metrics=False):\n"
        + "        loss = self.net(batch).sum()\n"
        + body
        + "        return loss\n\n"
        "    def training_step(self, batch, batch_idx):\n"
        "        return self.shared(batch)\n\n"
        "    def validation_step(self, batch, batch_idx):\n"
        "        return self.shared(batch, log_metrics=True)\n"
    )
    assert not [c for c in _codes(source) if c[0] == "TPU106"]
    # the training step passing True: every training step
    flipped = source.replace("return self.shared(batch)\n", "return self.shared(batch, True)\n")
    assert [c for c in _codes(flipped) if c[0] == "TPU106"]


@pytest.mark.parametrize(
    "training_call",
    [
        "self.compute_loss(batch, log=self.mode)",  # not a literal
        "self.compute_loss(batch, **self.kwargs)",  # spread: not visible
        "self.compute_loss(*batch)",  # spread
    ],
)
def test_what_the_training_call_passes_is_not_known(training_call: str) -> None:
    source = _SHARED.replace("self.compute_loss(batch)\n", training_call + "\n", 1)
    assert training_call in source
    assert ("TPU106", 18) in _codes(source)


def test_a_reassigned_parameter_keeps_the_code_reached() -> None:
    source = _SHARED.replace(
        "        x, y = batch\n", '        x, y = batch\n        log = log or "val"\n', 1
    )
    assert ("TPU106", 19) in _codes(source)


def test_a_caller_not_seen_keeps_the_code_reached() -> None:
    # handed to `checkpoint`: what it is called with is not seen
    source = _SHARED.replace(
        "return self.compute_loss(batch)\n",
        "return torch.utils.checkpoint.checkpoint(self.compute_loss, batch)\n",
        1,
    )
    found = _found(source)
    assert ("TPU106", 18) in [(code, line) for code, line, _ in found]
    # a hook of its own (`forward`, which anything may call): still reached, as its code
    hot_by_name = _SHARED.replace("compute_loss", "forward")
    assert ("TPU101", 20) in _codes(hot_by_name)


# A helper whose branch runs only for an argument that the calls under a once-in-a-while gate
# pass: the branch runs as rarely as those calls (the guards the routes that reach it share).
_RARE = (
    _HEAD
    + """\
    def _run(self, batch, dump_dir=None, quiet=True):
        loss = self.net(batch).sum()
        if dump_dir is not None:
            self.peak = loss.item()
            self._dump(batch)
        if not quiet:
            self.seen = loss.detach().cpu()
        return loss

    def _dump(self, batch):
        return batch.max().item()

    def training_step(self, batch, batch_idx):
        if GATE:
            loss = RARE_CALL
        else:
            loss = PLAIN_CALL
        return loss
"""
)
_ITEM, _HELPER, _CPU = 15, 22, 18


def _rare(gate: str, rare_call: str, plain_call: str = "self._run(batch)") -> str:
    source = _RARE.replace("GATE", gate).replace("RARE_CALL", rare_call)
    return source.replace("PLAIN_CALL", plain_call)


@pytest.mark.parametrize(
    "gate",
    [
        "batch_idx == 0",
        "self.hparams.verbose and batch_idx == 0",
        "self.global_step % 100 == 0",
        "self.debug",
    ],
)
@pytest.mark.parametrize(
    ("rare_call", "silenced"),
    [
        ("self._run(batch, dump_dir=self.trainer.log_dir)", (_ITEM, _HELPER)),
        ("self._run(batch, self.trainer.log_dir)", (_ITEM, _HELPER)),
        ("self._run(batch, quiet=False)", (_CPU,)),
        ("self._run(batch, self.out, False)", (_ITEM, _HELPER, _CPU)),
    ],
)
def test_a_branch_only_gated_calls_open_runs_as_rarely(
    gate: str, rare_call: str, silenced: tuple[int, ...]
) -> None:
    plain = _codes(_rare("True", rare_call))  # the same call on every step
    found = _codes(_rare(gate, rare_call))
    for line in silenced:
        assert [c for c in plain if c[1] == line], line
        assert not [c for c in found if c[1] == line], (line, found)


@pytest.mark.parametrize(
    "plain_call",
    [
        "self._run(batch, dump_dir=self.trainer.log_dir)",  # every step passes one too
        "self._run(batch, self.out)",  # by position, not a literal
        "self._run(batch, self.out if batch_idx else None)",
    ],
)
def test_an_ungated_call_passing_the_argument_keeps_the_branch(plain_call: str) -> None:
    found = _codes(_rare("batch_idx == 0", "self._run(batch, dump_dir=self.out)", plain_call))
    assert ("TPU101", _ITEM) in found and ("TPU101", _HELPER) in found


def test_an_ungated_literal_flipping_the_default_keeps_the_branch() -> None:
    found = _codes(
        _rare("batch_idx == 0", "self._run(batch, quiet=False)", "self._run(batch, None, False)")
    )
    assert ("TPU103", _CPU) in found


def test_a_helper_handed_on_keeps_the_branch() -> None:
    # `run` called through a name: what it passes is not followed
    source = _rare("batch_idx == 0", "self._run(batch, dump_dir=self.out)", "run(batch, self.out)")
    source = source.replace(
        "        if batch_idx == 0:", "        run = self._run\n        if batch_idx == 0:"
    )
    found = _codes(source)
    assert ("TPU101", _ITEM) in found and ("TPU101", _HELPER) in found
