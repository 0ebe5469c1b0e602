"""The names of Lightning's hooks, by how often they run: per batch (step methods, batch
hooks) or once per epoch or fit (cold). Shared by the summaries, the project model and the
per-file analysis."""

from __future__ import annotations

import re

STEP_METHODS = frozenset({"training_step", "validation_step", "test_step", "predict_step"})
LIGHTNING_BATCH_HOOKS = frozenset(
    {
        "on_train_batch_start",
        "on_train_batch_end",
        "on_validation_batch_start",
        "on_validation_batch_end",
        "on_test_batch_start",
        "on_test_batch_end",
        "on_predict_batch_start",
        "on_predict_batch_end",
        "on_before_backward",
        "on_after_backward",
        "on_before_optimizer_step",
        "on_before_zero_grad",
        "optimizer_step",
        "optimizer_zero_grad",
        "backward",
        "configure_gradient_clipping",
        "on_after_batch_transfer",
        "training_step_end",
        "validation_step_end",
        "test_step_end",
    }
)
CALLBACK_BATCH_HOOKS = frozenset(
    {
        "on_train_batch_start",
        "on_train_batch_end",
        "on_validation_batch_start",
        "on_validation_batch_end",
        "on_test_batch_start",
        "on_test_batch_end",
        "on_predict_batch_start",
        "on_predict_batch_end",
        "on_before_backward",
        "on_after_backward",
        "on_before_optimizer_step",
        "on_before_zero_grad",
    }
)
# Hooks that run once per epoch/fit (or never per batch): never made hot by a call.
COLD_METHODS = frozenset(
    {
        "__init__",
        "setup",
        "teardown",
        "prepare_data",
        "configure_optimizers",
        "configure_callbacks",
        "configure_model",
        "configure_sharded_model",
        "train_dataloader",
        "val_dataloader",
        "test_dataloader",
        "predict_dataloader",
        "on_save_checkpoint",
        "on_load_checkpoint",
        "state_dict",
        "load_state_dict",
        "lr_scheduler_step",
        "compute",
        "reset",
    }
)


def is_cold_name(name: str) -> bool:
    if name in COLD_METHODS:
        return True
    return name.startswith("on_") and "batch" not in name and name not in LIGHTNING_BATCH_HOOKS


# Name tokens of other accelerators (Graphcore IPUs, Habana Gaudi HPUs, Ascend NPUs): a class or
# function named for one (`BCELossIPU`, `PredictorModuleIPU`, `create_ipu_dataloader`) is
# written to run there, not on a TPU.
_OTHER_ACCELERATOR_TOKENS = frozenset({"ipu", "ipus", "hpu", "hpus", "habana", "gaudi", "npu"})
_NAME_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def names_other_accelerator(name: str) -> bool:
    """Whether an identifier names another accelerator (by its words: `BCELossIPU`,
    `ipu_options`, `HabanaStrategy`; not `input` or `npuzzle`)."""
    return any(token.lower() in _OTHER_ACCELERATOR_TOKENS for token in _NAME_TOKEN.findall(name))
