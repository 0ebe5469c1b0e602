"""The user's Trainer arguments merged with verify's own settings (runtime/trainer_args.py):
pure logic, no torch."""

from __future__ import annotations

import subprocess
import sys

import pytest
from tpulint.runtime.errors import VerifyError
from tpulint.runtime.trainer_args import (
    STAND_IN_LOGGER,
    STAND_IN_PROGRESS_BAR,
    check_names,
    describe,
    drop_reason,
    merge,
    own_settings,
    trainer_parameters,
)


def _own(**overrides):
    settings = {"accelerator": "tpu", "cores": 8, "epochs": 2, "steps": 32, "run_dir": "/run"}
    settings.update(overrides)
    return own_settings(**settings)


def _overridden(args):
    return {o.name: (o.requested, o.used) for o in args.overridden}


def test_without_user_arguments_verify_sets_everything_and_overrides_nothing() -> None:
    args = merge({}, _own(), verify_callbacks=["recorder"])
    assert args.overridden == []
    assert args.requested == {}
    assert args.used["devices"] == 8
    assert args.used["max_epochs"] == 2
    assert args.used["limit_train_batches"] == 32
    assert args.used["logger"] == STAND_IN_LOGGER  # built by the child: takes every call
    assert "enable_checkpointing" not in args.used  # Lightning's default checkpointing stays
    assert args.used["default_root_dir"] == "/run"
    assert args.used["callbacks"] == [STAND_IN_PROGRESS_BAR, "recorder"]


def test_a_logger_of_the_users_is_replaced_by_the_stand_in_and_false_stays_false() -> None:
    args = merge({"logger": object()}, _own())
    assert args.used["logger"] == STAND_IN_LOGGER
    assert "writes nothing" in args.overridden[0].reason
    assert merge({"logger": False}, _own()).used["logger"] is False
    assert merge({"logger": True}, _own()).used["logger"] == STAND_IN_LOGGER


def test_no_progress_bar_is_added_when_the_user_turned_it_off() -> None:
    # Lightning refuses a progress bar callback with enable_progress_bar=False
    args = merge({"enable_progress_bar": False}, _own(), ["recorder"])
    assert args.used["callbacks"] == ["recorder"]
    assert args.used["enable_progress_bar"] is False


def test_the_users_arguments_pass_through() -> None:
    requested = {"accumulate_grad_batches": 4, "precision": "bf16-true", "gradient_clip_val": 0.5}
    args = merge(requested, _own())
    assert {k: args.used[k] for k in requested} == requested
    assert args.overridden == []


def test_conflicts_go_to_verify_and_are_recorded_with_the_reason() -> None:
    requested = {"devices": 4, "accelerator": "gpu", "strategy": "ddp", "max_epochs": 100}
    args = merge(requested, _own())
    assert _overridden(args) == {
        "devices": (4, 8),
        "accelerator": ("gpu", "tpu"),
        "strategy": ("ddp", "auto"),
        "max_epochs": (100, 2),
    }
    reasons = {o.name: o.reason for o in args.overridden}
    assert "--cores 8" in reasons["devices"]
    assert "--epochs" in reasons["max_epochs"]
    assert args.requested == requested  # what the user asked stays on record


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("devices", "auto"),
        ("devices", -1),
        ("devices", 8),
        ("devices", "8"),
        ("accelerator", "tpu"),
        ("accelerator", "auto"),
        ("strategy", "xla"),
        ("logger", False),
        ("enable_checkpointing", False),
        ("enable_checkpointing", True),
        ("num_nodes", 1),
    ],
)
def test_values_that_mean_the_same_are_not_conflicts(name: str, value: object) -> None:
    assert merge({name: value}, _own()).overridden == []


def test_the_step_budget_caps_limit_train_batches() -> None:
    assert merge({"limit_train_batches": 8}, _own()).used["limit_train_batches"] == 8
    assert merge({"limit_train_batches": 8}, _own()).overridden == []
    capped = merge({"limit_train_batches": 100}, _own())
    assert _overridden(capped) == {"limit_train_batches": (100, 32)}
    assert "--steps 32" in capped.overridden[0].reason
    # a fraction cannot be combined with a batch count known only when the loader is built
    assert _overridden(merge({"limit_train_batches": 0.5}, _own())) == {
        "limit_train_batches": (0.5, 32)
    }
    # whole epochs (steps=None): the user's value as it is
    assert merge({"limit_train_batches": 0.5}, _own(steps=None)).used["limit_train_batches"] == 0.5


def _class(name: str, module: str, *bases: type) -> type:
    """A stand-in for a Lightning class: callbacks are matched by class name and package."""
    return type(name, bases, {"__module__": module})


ModelCheckpoint = _class("ModelCheckpoint", "lightning.pytorch.callbacks.model_checkpoint")
ProgressBar = _class("ProgressBar", "pytorch_lightning.callbacks.progress.progress_bar")
TQDMProgressBar = _class(
    "TQDMProgressBar", "pytorch_lightning.callbacks.progress.tqdm_progress", ProgressBar
)
UserCheckpoint = _class("ModelCheckpoint", "myproject.callbacks")  # the user's own, same name


def test_progress_bars_are_replaced_with_the_reason_other_callbacks_kept() -> None:
    checkpoint, bar, mine, other = ModelCheckpoint(), TQDMProgressBar(), UserCheckpoint(), object()
    # checkpoint callbacks stay (the child keeps their logic and skips the file)
    assert drop_reason(checkpoint) is None
    assert "silent progress bar" in drop_reason(bar)  # through its base, in pytorch_lightning
    assert drop_reason(mine) is None
    args = merge({"callbacks": [checkpoint, mine, bar, other]}, _own(), ["recorder"])
    assert args.used["callbacks"] == [checkpoint, mine, other, STAND_IN_PROGRESS_BAR, "recorder"]
    assert [(o.name, o.requested, o.used) for o in args.overridden] == [("callbacks", bar, None)]
    # a single callback, not in a list, is accepted as Lightning accepts it
    assert merge({"callbacks": other}, _own(), ["recorder"]).used["callbacks"] == [
        other,
        STAND_IN_PROGRESS_BAR,
        "recorder",
    ]


def test_describe_makes_any_argument_json_able() -> None:
    assert describe({"a": [1, 2.5, None, "x", float("inf")]}) == {"a": [1, 2.5, None, "x", "inf"]}
    assert (
        describe(ModelCheckpoint())
        == "<lightning.pytorch.callbacks.model_checkpoint.ModelCheckpoint>"
    )
    as_json = merge({"callbacks": [ModelCheckpoint()], "devices": 2}, _own()).to_json()
    assert as_json["overridden"][0] == {
        "name": "devices",
        "requested": 2,
        "used": 8,
        "reason": "verify trains on --cores 8 (pass --cores to choose)",
    }
    assert as_json["used"]["callbacks"] == [
        "<lightning.pytorch.callbacks.model_checkpoint.ModelCheckpoint>",
        STAND_IN_PROGRESS_BAR,
    ]


def test_unknown_names_are_one_line_with_a_suggestion() -> None:
    known = ["accumulate_grad_batches", "precision"]
    check_names(["precision"], known, "--trainer-args")
    with pytest.raises(VerifyError) as error:
        check_names(["precision", "acumulate_grad_batches"], known, "--trainer-args")
    assert error.value.message == (
        "--trainer-args: `acumulate_grad_batches` is not an argument of Trainer;"
        " did you mean `accumulate_grad_batches`?"
    )
    with pytest.raises(VerifyError, match=r"`zzz` is not an argument of Trainer$"):
        check_names(["zzz"], known, "--trainer-args")


@pytest.mark.parametrize("distribution", ["lightning", "pytorch_lightning"])
def test_trainer_parameters_are_read_from_the_installed_source(distribution: str) -> None:
    before = set(sys.modules)
    names = trainer_parameters(distribution)
    if names is None:
        pytest.skip(f"{distribution} is not installed")
    assert "self" not in names
    assert {"accumulate_grad_batches", "precision", "callbacks", "devices"} <= set(names)
    assert {m for m in set(sys.modules) - before if "lightning" in m} == set()  # nothing imported


def test_trainer_parameters_of_a_missing_package_are_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tpulint.runtime import trainer_args

    monkeypatch.setitem(
        trainer_args.TRAINER_SOURCES, "lightning", ("tpulint_no_such_package", "trainer.py")
    )
    assert trainer_parameters("lightning") is None


@pytest.mark.runtime
def test_the_source_reading_matches_the_imported_signature() -> None:
    code = (
        "import inspect, lightning.pytorch as L; "
        "print(' '.join(list(inspect.signature(L.Trainer.__init__).parameters)[1:]))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert trainer_parameters("lightning") == run.stdout.split()


def test_emulation_runs_bf16_true_as_16_true_and_says_why() -> None:
    emulated = _own(emulated=True)
    args = merge({"precision": "bf16-true"}, emulated)
    assert args.used["precision"] == "16-true"
    assert _overridden(args) == {"precision": ("bf16-true", "16-true")}
    assert "cannot all-reduce bf16" in args.overridden[0].reason
    assert merge({"precision": "32-true"}, emulated).overridden == []
    assert "precision" not in merge({}, emulated).used  # not given: Lightning's default
    assert merge({"precision": "bf16-true"}, _own()).used["precision"] == "bf16-true"  # a TPU
