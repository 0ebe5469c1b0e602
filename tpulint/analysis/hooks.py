"""The names of Lightning's hooks, by how often they run: per batch (step methods, batch
hooks) or once per epoch or fit (cold). Shared by the summaries, the project model and the
per-file analysis."""

from __future__ import annotations

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
