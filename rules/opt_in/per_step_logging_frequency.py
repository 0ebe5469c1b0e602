"""TPU901 per-step-logging-frequency."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.context import get_arg
from tpulint.analysis.yaml_config import YamlDocument, YamlEntry
from tpulint.datatypes.diagnostics import Applicability, Edit, Severity
from tpulint.rule_api.cst_helpers import int_value, keyword_arg
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.configuration import (
    TpuFileScan,
    is_framework_file,
    is_lightning_name,
    trainer_is_tpu,
    yaml_trainer_is_tpu,
)
from ..shared.matchers import is_trainer_call, source_of

_MIN_INTERVAL = 10  # below this, Lightning reads logged tensors on (nearly) every step
_SUGGESTED_INTERVAL = 50  # Lightning's default `log_every_n_steps`
_PROGRESS_BARS = frozenset({"TQDMProgressBar", "RichProgressBar"})


class PerStepLoggingFrequency(Rule):
    """
    ## What it does
    Finds logging and progress-bar settings that read metrics on (nearly) every training
    step in TPU setups: `Trainer(log_every_n_steps=N)` and
    `TQDMProgressBar(refresh_rate=N)` / `RichProgressBar(refresh_rate=N)` with `N` below
    10 (an explicit progress bar without `refresh_rate` counts as 1, its default), in files
    that build a TPU Trainer or import torch_xla, and the same keys in LightningCLI YAML
    configs and Hydra Trainer configs whose trainer is a TPU one. The Trainer's implicit
    progress bar is not reported.

    ## Why is this bad on TPU?
    Logged values stay on the TPU until Lightning needs them; every logging step (and every
    progress-bar refresh that shows `prog_bar=True` metrics) converts them to Python numbers,
    which waits for the device and copies to the host. Every few steps this stalls the
    pipeline that lets the host trace step N+1 while the TPU runs step N, and Lightning
    users have reported the TQDM refresh triggering extra compilations
    (Lightning#15743, #15884). torch_xla's advice is to reduce logging frequency
    (pytorch/xla#5058).

    ## Example
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", devices="auto", log_every_n_steps=1)
    ```

    ## Use instead
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", devices="auto", log_every_n_steps=50)
    ```

    ## Fix safety
    Display-only: the suggestion uses 50 (Lightning's default for `log_every_n_steps`); how
    often to log is a trade-off only the user can make. The threshold is 10: intervals of
    10 or more steps spread the cost over enough steps to be a minor share of the run.

    ## References
    - [Lightning#15743: TQDMProgressBar refresh forces TPU recompiles](https://github.com/Lightning-AI/pytorch-lightning/issues/15743)
    - [Lightning#15884: callbacks reading lazy tensors on TPU](https://github.com/Lightning-AI/pytorch-lightning/issues/15884)
    - [pytorch/xla#5058: reduce logging frequency on TPU](https://github.com/pytorch/xla/issues/5058)
    - [Lightning docs: logging frequency](https://lightning.ai/docs/pytorch/stable/extensions/logging.html)
    """

    code = "TPU901"
    name = "per-step-logging-frequency"
    summary = "Logging or progress-bar refresh on (nearly) every step in TPU setups"
    severity = Severity.WARNING
    fix_applicability = Applicability.DISPLAY_ONLY
    fix_message = f"Log every {_SUGGESTED_INTERVAL} steps"
    default_enabled = False
    requires = ("log_every_n_steps", "ProgressBar")

    VALID = (
        Valid(
            "import lightning as L\n\n"
            'trainer = L.Trainer(accelerator="tpu", log_every_n_steps=50)\n'
        ),
        # A GPU Trainer: per-step logging costs little there.
        Valid(
            'import lightning as L\n\ntrainer = L.Trainer(accelerator="gpu", log_every_n_steps=1)\n'
        ),
        Valid(
            "import torch_xla\nfrom lightning.pytorch.callbacks import TQDMProgressBar\n\n"
            "bar = TQDMProgressBar(refresh_rate=100)\n"
        ),
        Valid("trainer:\n  accelerator: tpu\n  log_every_n_steps: 50\n", path="config.yaml"),
    )
    INVALID = (
        Invalid(
            "import lightning as L\n\n"
            'trainer = L.Trainer(accelerator="tpu", log_every_n_steps=1)\n',
            line=3,
            message="every step",
            expected_suggestion="import lightning as L\n\n"
            'trainer = L.Trainer(accelerator="tpu", log_every_n_steps=50)\n',
        ),
        Invalid(
            "import lightning as L\nfrom lightning.pytorch.callbacks import TQDMProgressBar\n\n"
            'trainer = L.Trainer(accelerator="tpu", callbacks=[TQDMProgressBar()])\n',
            message="refresh_rate",
        ),
        Invalid(
            "trainer:\n  accelerator: tpu\n  log_every_n_steps: 2\n"
            "  callbacks:\n    - class_path: lightning.pytorch.callbacks.TQDMProgressBar\n"
            "      init_args:\n        refresh_rate: 1\n",
            path="config.yaml",
            count=2,
            line=3,
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._tpu_file = TpuFileScan()
        return None

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if is_framework_file(ctx):
            return
        if is_trainer_call(ctx, node):
            arg = keyword_arg(node, "log_every_n_steps")
            value = int_value(arg.value) if arg is not None else None
            if arg is None or value is None or not 0 < value < _MIN_INTERVAL:
                return
            if not (
                trainer_is_tpu(ctx, node) or (self._tpu_file(ctx) and not _other_accelerator(node))
            ):
                return
            self.report(
                arg,
                _interval_message(f"log_every_n_steps={value}", value, "logged metrics"),
                replacement=arg.with_changes(value=cst.Integer(str(_SUGGESTED_INTERVAL))),
            )
            return
        if not is_lightning_name(ctx, node.func, _PROGRESS_BARS) or not self._tpu_file(ctx):
            return
        arg = get_arg(node, "refresh_rate", 0)
        if arg is None:
            self.report(
                node,
                _interval_message(
                    f"{source_of(ctx, node)} (refresh_rate=1, the default)",
                    1,
                    "progress-bar metrics",
                ),
            )
            return
        value = int_value(arg.value)
        if value is None or not 0 < value < _MIN_INTERVAL:
            return
        self.report(
            arg,
            _interval_message(f"refresh_rate={value}", value, "progress-bar metrics"),
            replacement=arg.with_changes(value=cst.Integer(str(_SUGGESTED_INTERVAL))),
        )

    def check_yaml(self, document: YamlDocument) -> None:
        trainer = document.find("trainer")
        if trainer is None or not yaml_trainer_is_tpu(trainer):
            return
        entry = trainer.child("log_every_n_steps")
        if entry is not None:
            self._yaml_interval(entry, "log_every_n_steps", "logged metrics")
        for item in document.callbacks():
            class_path = item.child("class_path")
            if class_path is None or str(class_path.value).rsplit(".", 1)[-1] not in _PROGRESS_BARS:
                continue
            rate = item.argument("refresh_rate")
            if rate is None:
                self.report_yaml(
                    class_path.key_start,
                    class_path.value_end or class_path.key_end,
                    _interval_message(
                        f"{class_path.value} (refresh_rate=1, the default)",
                        1,
                        "progress-bar metrics",
                    ),
                )
            else:
                self._yaml_interval(rate, "refresh_rate", "progress-bar metrics")

    def _yaml_interval(self, entry: YamlEntry, key: str, what: str) -> None:
        value = entry.value
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < _MIN_INTERVAL:
            return
        if entry.value_start is None or entry.value_end is None:
            return
        self.report_yaml(
            entry.key_start,
            entry.value_end,
            _interval_message(f"{key}: {value}", value, what),
            edits=[Edit(entry.value_start, entry.value_end, str(_SUGGESTED_INTERVAL))],
        )


def _other_accelerator(call: cst.Call) -> bool:
    accelerator = keyword_arg(call, "accelerator")
    if accelerator is None:
        return False
    from tpulint.rule_api.cst_helpers import string_value

    value = string_value(accelerator.value)
    return value is not None and value.lower() not in ("tpu", "auto")


def _interval_message(code: str, value: int, what: str) -> str:
    every = "every step" if value == 1 else f"every {value} steps"
    return (
        f"`{code}` reads {what} from the TPU {every}: each read waits for the device and copies "
        f"to the host, stalling the step pipeline; use {_SUGGESTED_INTERVAL} or more"
    )
