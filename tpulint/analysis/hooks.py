"""The names of Lightning's hooks, by how often they run: per batch (step methods, batch
hooks) or once per epoch or fit (cold). Shared by the summaries, the project model and the
per-file analysis."""

from __future__ import annotations

import functools
import itertools
import re

STEP_METHODS = frozenset({"training_step", "validation_step", "test_step", "predict_step"})
# A step hook's name inside a longer method name (`_training_step_on_batch`): the template
# method a library's base LightningModule calls from the step it defines (ProjectModel.
# _step_runs_by_name); its first parameter is the step's batch.
STEP_PART = re.compile(r"(?:^|_)(training|validation|test|predict)_step_")
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


def is_pytest_test(name: str, cls: str | None) -> bool:
    """Whether pytest collects this function as a test (its default `python_functions` and
    `python_classes`: `test_*` functions at module level or in a `Test*` class): a test checks
    the code on the host; it is not how a project trains."""
    if not (name == "test" or name.startswith("test_")):
        return False
    return cls is None or cls.rsplit(".", 1)[-1].startswith("Test")


# Name tokens of other accelerators (Graphcore IPUs, Habana Gaudi HPUs, Ascend NPUs): a class or
# function named for one (`BCELossIPU`, `PredictorModuleIPU`, `create_ipu_dataloader`) is
# written to run there, not on a TPU.
_OTHER_ACCELERATOR_TOKENS = frozenset({"ipu", "ipus", "hpu", "hpus", "habana", "gaudi", "npu"})
_NAME_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


# Kept per identifier: the hot set asks it of every function it reaches, in each of its
# passes (ProjectModel.hot), and the answer depends on the name alone.
@functools.lru_cache(maxsize=65536)
def names_other_accelerator(name: str) -> bool:
    """Whether an identifier names another accelerator (by its words: `BCELossIPU`,
    `ipu_options`, `HabanaStrategy`; not `input` or `npuzzle`), or CUDA graphs
    (`search_cuda_graphs`, `CudaGraphRunner`, `cudagraph_step`), which only CUDA has: code
    written to capture or replay one never runs on a TPU."""
    tokens = [token.lower() for token in _NAME_TOKEN.findall(name)]
    if any(token in _OTHER_ACCELERATOR_TOKENS for token in tokens):
        return True
    pairs = itertools.pairwise(tokens)
    return any(t.startswith("cudagraph") for t in tokens) or any(
        a == "cuda" and b in ("graph", "graphs") for a, b in pairs
    )


# The methods Lightning 2 calls on a LightningModule, a LightningDataModule or a Callback
# (lightning/pytorch/core/hooks.py ModelHooks, DataHooks, CheckpointHooks; callbacks/callback.py
# Callback; core/module.py), by name. A method of such a class named `on_*` that is not one of
# them (`on_keyboard_interrupt`, `on_pretrain_routine_start`: Lightning 1 hooks) never runs.
LIGHTNING_HOOKS = frozenset(
    {
        "backward",
        "configure_callbacks",
        "configure_gradient_clipping",
        "configure_model",
        "configure_optimizers",
        "configure_sharded_model",
        "forward",
        "load_state_dict",
        "lr_scheduler_step",
        "on_after_backward",
        "on_after_batch_transfer",
        "on_before_backward",
        "on_before_batch_transfer",
        "on_before_optimizer_step",
        "on_before_zero_grad",
        "on_exception",
        "on_fit_end",
        "on_fit_start",
        "on_load_checkpoint",
        "on_predict_batch_end",
        "on_predict_batch_start",
        "on_predict_end",
        "on_predict_epoch_end",
        "on_predict_epoch_start",
        "on_predict_model_eval",
        "on_predict_start",
        "on_sanity_check_end",
        "on_sanity_check_start",
        "on_save_checkpoint",
        "on_test_batch_end",
        "on_test_batch_start",
        "on_test_end",
        "on_test_epoch_end",
        "on_test_epoch_start",
        "on_test_model_eval",
        "on_test_model_train",
        "on_test_start",
        "on_train_batch_end",
        "on_train_batch_start",
        "on_train_end",
        "on_train_epoch_end",
        "on_train_epoch_start",
        "on_train_start",
        "on_validation_batch_end",
        "on_validation_batch_start",
        "on_validation_end",
        "on_validation_epoch_end",
        "on_validation_epoch_start",
        "on_validation_model_eval",
        "on_validation_model_train",
        "on_validation_model_zero_grad",
        "on_validation_start",
        "optimizer_step",
        "optimizer_zero_grad",
        "predict_dataloader",
        "predict_step",
        "prepare_data",
        "setup",
        "state_dict",
        "teardown",
        "test_dataloader",
        "test_step",
        "train_dataloader",
        "training_step",
        "transfer_batch_to_device",
        "val_dataloader",
        "validation_step",
    }
)
# Lightning 1 hooks that Lightning 2 removed (they run only under `lightning-version` < 2).
LIGHTNING1_HOOKS = frozenset(
    {
        "training_epoch_end",
        "validation_epoch_end",
        "test_epoch_end",
        "training_step_end",
        "validation_step_end",
        "test_step_end",
        "on_epoch_start",
        "on_epoch_end",
        "on_batch_start",
        "on_batch_end",
        "on_pretrain_routine_start",
        "on_pretrain_routine_end",
        "on_keyboard_interrupt",
        "on_init_start",
        "on_init_end",
        "on_post_move_to_device",
        "on_hpc_save",
        "on_hpc_load",
        "on_train_dataloader",
        "on_val_dataloader",
        "on_test_dataloader",
        "on_predict_dataloader",
        "get_progress_bar_dict",
        "on_configure_sharded_model",
        "on_before_accelerator_backend_setup",
    }
)
# Hooks that run at the end of an epoch, a stage or the fit, or when a checkpoint is saved
# (besides `*_epoch_end`): what only they reach runs no training step.
END_HOOKS = frozenset(
    {
        "on_fit_end",
        "on_train_end",
        "on_validation_end",
        "on_test_end",
        "on_sanity_check_end",
        "on_epoch_end",
        "on_save_checkpoint",
        "on_exception",
        "teardown",
    }
)


def is_end_hook(name: str) -> bool:
    """An end-of-epoch or end-of-fit hook of Lightning 2 or 1 (`on_validation_epoch_end`,
    `validation_epoch_end`, `on_fit_end`)."""
    return name in END_HOOKS or (name.endswith("_epoch_end") and name != "_epoch_end")


def _hooks_of_stage(stage: str) -> frozenset[str]:
    """The hooks of one `trainer.<stage>` loop, read off the hook tables above (Lightning 2
    and 1): `<stage>_step`, `<stage>_dataloader`, `on_<stage>_*`, `<stage>_epoch_end`."""
    return frozenset(
        name
        for name in LIGHTNING_HOOKS | LIGHTNING1_HOOKS
        if name.startswith((f"{stage}_", f"on_{stage}_"))
    )


# Hooks of `trainer.predict`: inference, not training.
PREDICT_HOOKS = _hooks_of_stage("predict")
# Hooks of `trainer.test`: evaluation after training, never run by `trainer.fit` (which runs
# the training and validation loops: lightning/pytorch/trainer/trainer.py `_run_stage`).
TEST_HOOKS = _hooks_of_stage("test")
# Methods of torch.nn.Module and torchmetrics.Metric a subclass overrides for torch to call.
MODULE_API = frozenset(
    {
        "forward",
        "extra_repr",
        "reset_parameters",
        "_load_from_state_dict",
        "_save_to_state_dict",
        "_apply",
        "load_state_dict",
        "state_dict",
        "get_extra_state",
        "set_extra_state",
        "train",
        "eval",
        "to",
        "update",
        "compute",
        "reset",
        "merge_state",
        "plot",
    }
)
