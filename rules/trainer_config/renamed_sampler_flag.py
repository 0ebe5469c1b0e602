"""TPU002 renamed-sampler-flag."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.yaml_config import YamlDocument
from tpulint.datatypes.diagnostics import Applicability, Edit, Severity
from tpulint.rule_api.cst_helpers import keyword_arg, rename_keyword, string_value
from tpulint.rule_api.rule import Invalid, Rule, Valid

from ..shared.configuration import is_framework_file, lightning_at_least
from ..shared.matchers import LEGACY_TPU_KEYWORDS, contains_trainer_call, is_trainer_call
from .helpers import _LIGHTNING_IMPORT

_SAMPLER_OLD = "replace_sampler_ddp"
_SAMPLER_NEW = "use_distributed_sampler"
# Trainer arguments Lightning 2.0 removed without a new name that some rule reports (checked
# against the installed Lightning 2.6 `Trainer.__init__`, which accepts none of them): a call
# that passes one is written for Lightning 1.x, where `replace_sampler_ddp` is right.
_LIGHTNING1_ONLY = frozenset(
    {
        "gpus",
        "ipus",
        "num_processes",
        "auto_select_gpus",
        "checkpoint_callback",
        "progress_bar_refresh_rate",
        "process_position",
        "flush_logs_every_n_steps",
        "weights_summary",
        "weights_save_path",
        "resume_from_checkpoint",
        "auto_lr_find",
        "auto_scale_batch_size",
        "terminate_on_nan",
        "stochastic_weight_avg",
        "amp_backend",
        "amp_level",
        "move_metrics_to_cpu",
        "multiple_trainloader_mode",
        "track_grad_norm",
        "prepare_data_per_node",
        "reload_dataloaders_every_epoch",
        "distributed_backend",
        "truncated_bptt_steps",
        "log_gpu_memory",
    }
)
# Lightning 1.x took a strategy as `accelerator="ddp"`; 2.x accepts only devices there.
_LIGHTNING1_ACCELERATORS = frozenset({"dp", "ddp", "ddp2", "ddp_spawn", "ddp_cpu", "horovod"})


class RenamedSamplerFlag(Rule):
    """
    ## What it does
    Finds the Trainer argument `replace_sampler_ddp`: in `Trainer(...)` calls, in
    dictionaries of Trainer arguments, in config classes and parameters that feed the
    Trainer, under `trainer:` in LightningCLI YAML configs, and in Hydra Trainer configs
    (a `configs/trainer/*.yaml` whose `_target_` is the Trainer), and in YAML sections the
    code spreads into a TPU Trainer (`pl.Trainer(**cfg.trainer)`).

    ## Why is this bad on TPU?
    Lightning 2.0 renamed the flag to `use_distributed_sampler`:
    `Trainer(replace_sampler_ddp=False)` raises `TypeError: Trainer.__init__() got an
    unexpected keyword argument 'replace_sampler_ddp'`. The flag matters on TPUs: it decides
    whether Lightning gives every TPU core its own shard of the data (a `DistributedSampler`
    over the XLA world size) or leaves the sampler alone.

    ## Example
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", replace_sampler_ddp=False)
    ```

    ## Use instead
    ```python
    import lightning as L

    trainer = L.Trainer(accelerator="tpu", use_distributed_sampler=False)
    ```

    ## Fix safety
    The fix renames the argument (or the YAML key) and is safe: the flag has the same
    meaning and the same default (`True`) under its new name. It is not offered when the call
    already sets `use_distributed_sampler`. Dictionary keys, config fields and parameters are
    reported without a fix, since renaming them changes an interface. Nothing is reported
    when the configured `lightning-version` is older than 2.0, where the old name is right,
    nor on a `Trainer(...)` call written for Lightning 1.x: one that also passes arguments
    Lightning 2.0 removed outright (`gpus=`, `checkpoint_callback=`, `auto_lr_find=`,
    `accelerator="ddp"`, ...). Such a call targets 1.x, where the flag is right, and under 2.x
    it fails on those arguments too: renaming this one would not make it run. A 1.x call that
    asks for TPUs (`tpu_cores=args.tpu_cores`, which TPU001 reports) is the TPU path a port to
    Lightning 2 rewrites: the flag is reported there too, without a fix (renamed alone it
    would break the call under 1.x).

    ## References
    - [Lightning 2.0 changelog: `replace_sampler_ddp` renamed (#16829)](https://github.com/Lightning-AI/pytorch-lightning/pull/16829)
    - [Lightning docs: Trainer `use_distributed_sampler`](https://lightning.ai/docs/pytorch/stable/common/trainer.html#use-distributed-sampler)
    """

    code = "TPU002"
    name = "renamed-sampler-flag"
    summary = (
        "Trainer argument `replace_sampler_ddp`, renamed `use_distributed_sampler` in Lightning 2.0"
    )
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    fix_sometimes = True
    fix_message = "Rename to `use_distributed_sampler`"
    requires = (_SAMPLER_OLD,)

    VALID = (
        Valid(_LIGHTNING_IMPORT + "trainer = L.Trainer(use_distributed_sampler=False)\n"),
        # Lightning's own plumbing: a parameter of something that is not the Trainer.
        Valid(
            "class AcceleratorConnector:\n"
            "    def __init__(self, replace_sampler_ddp=True):\n"
            "        self.replace_sampler_ddp = replace_sampler_ddp\n"
        ),
        # Lightning 1.x is targeted: the old name is the right one.
        Valid(
            _LIGHTNING_IMPORT + "trainer = L.Trainer(replace_sampler_ddp=False)\n",
            config={"lightning-version": "1.9"},
        ),
        Valid("trainer:\n  use_distributed_sampler: false\n", path="config.yaml"),
        # A call written for Lightning 1.x throughout: `gpus=` and `checkpoint_callback=`
        # exist only there, where `replace_sampler_ddp` is the right name.
        Valid(
            "import pytorch_lightning as pl\n\n"
            "trainer = pl.Trainer(gpus=2, checkpoint_callback=False, replace_sampler_ddp=False)\n"
        ),
        Valid(
            "import pytorch_lightning as pl\n\n"
            'trainer = pl.Trainer(accelerator="ddp" if n > 1 else None, replace_sampler_ddp=0)\n'
        ),
        # A 1.x call whose `tpu_cores=None` asks for no TPU: still another machine's call.
        Valid(
            "import pytorch_lightning as pl\n\n"
            "trainer = pl.Trainer(gpus=2, tpu_cores=None, replace_sampler_ddp=False)\n"
        ),
    )
    INVALID = (
        Invalid(
            _LIGHTNING_IMPORT
            + 'trainer = L.Trainer(accelerator="tpu", replace_sampler_ddp=False)\n',
            expected_fix=_LIGHTNING_IMPORT
            + 'trainer = L.Trainer(accelerator="tpu", use_distributed_sampler=False)\n',
            line=3,
            applicability=Applicability.SAFE,
            message="renamed `use_distributed_sampler`",
        ),
        Invalid(
            "from pytorch_lightning import Trainer\n\n"
            "trainer = Trainer(\n"
            "    max_epochs=1,\n"
            "    replace_sampler_ddp=False,  # we shard ourselves\n"
            ")\n",
            expected_fix="from pytorch_lightning import Trainer\n\n"
            "trainer = Trainer(\n"
            "    max_epochs=1,\n"
            "    use_distributed_sampler=False,  # we shard ourselves\n"
            ")\n",
        ),
        # Both spellings: report, but do not guess which one is meant.
        Invalid(
            _LIGHTNING_IMPORT
            + "trainer = L.Trainer(replace_sampler_ddp=False, use_distributed_sampler=True)\n",
            message="already sets `use_distributed_sampler`",
        ),
        Invalid(
            "import pytorch_lightning as pl\n\n"
            "def build(replace_sampler_ddp: bool = True):\n"
            '    kwargs = {"replace_sampler_ddp": replace_sampler_ddp}\n'
            "    return pl.Trainer(**kwargs)\n",
            count=2,
            line=3,
        ),
        # The TPU Trainer of a Lightning 1.x script: reported, with no fix.
        Invalid(
            "import pytorch_lightning as pl\n\n"
            "def build(args):\n"
            "    return pl.Trainer(\n"
            "        gpus=args.gpus,\n"
            "        tpu_cores=args.tpu_cores,\n"
            "        replace_sampler_ddp=args.shard,\n"
            "    )\n",
            line=7,
            message="this TPU Trainer call is written for Lightning 1.x (it also passes `gpus`)",
        ),
        Invalid(
            "trainer:\n  accelerator: tpu\n  replace_sampler_ddp: false  # custom sampler\n",
            path="config.yaml",
            expected_fix="trainer:\n  accelerator: tpu\n"
            "  use_distributed_sampler: false  # custom sampler\n",
            line=3,
            applicability=Applicability.SAFE,
        ),
    )

    def visit_Module(self, node: cst.Module) -> bool | None:
        self._enabled = lightning_at_least(self.ctx, "2.0") and not is_framework_file(self.ctx)
        return None

    def visit_Call(self, node: cst.Call) -> None:
        if not self._enabled:
            return
        if is_trainer_call(self.ctx, node):
            arg = keyword_arg(node, _SAMPLER_OLD)
            if arg is None:
                return
            message = (
                "`replace_sampler_ddp` was renamed `use_distributed_sampler` in Lightning 2.0 "
                "(TypeError at Trainer construction)"
            )
            legacy = _written_for_lightning1(node)
            if legacy is not None:
                if not _asks_for_tpus(node):
                    return
                # The TPU Trainer of a Lightning 1.x script (`tpu_cores=`, which TPU001
                # reports): its port to Lightning 2 renames this argument too. Renaming it
                # alone would break the call under 1.x: no fix.
                self.report(
                    arg,
                    message + f"; this TPU Trainer call is written for Lightning 1.x (it also "
                    f"passes `{legacy}`): port the whole call",
                )
                return
            if keyword_arg(node, _SAMPLER_NEW) is not None:
                self.report(
                    arg, message + "; this call already sets `use_distributed_sampler`: remove one"
                )
                return
            self.report(
                arg, message, replacement=rename_keyword(node, arg, _SAMPLER_NEW), replaces=node
            )
            return
        if isinstance(node.func, cst.Name) and node.func.value == "dict":
            arg = keyword_arg(node, _SAMPLER_OLD)
            if arg is not None and arg.keyword is not None:
                self._report_key(arg.keyword)

    def _report_key(self, node: cst.CSTNode) -> None:
        if "lightning" not in self.ctx.source:
            return
        self.report(
            node,
            "Trainer argument `replace_sampler_ddp` was renamed `use_distributed_sampler` in "
            "Lightning 2.0; rename this key",
        )

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if self._enabled and string_value(node.key) == _SAMPLER_OLD:
            self._report_key(node.key)

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self._enabled:
            return
        for target in node.targets:
            sub = target.target
            if isinstance(sub, cst.Subscript) and len(sub.slice) == 1:
                index = sub.slice[0].slice
                if isinstance(index, cst.Index) and string_value(index.value) == _SAMPLER_OLD:
                    self._report_key(index.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        target = node.target
        if (
            self._enabled
            and isinstance(target, cst.Name)
            and target.value == _SAMPLER_OLD
            and self.ctx.function is None
            and self.ctx.klass is not None
        ):
            self.report(
                target,
                "config field `replace_sampler_ddp` feeds the Trainer argument renamed "
                "`use_distributed_sampler` in Lightning 2.0",
            )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not self._enabled:
            return
        params = [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]
        for param in params:
            if param.name.value == _SAMPLER_OLD and contains_trainer_call(self.ctx, node.body):
                self.report(
                    param.name,
                    "parameter `replace_sampler_ddp` forwards the Trainer argument renamed "
                    "`use_distributed_sampler` in Lightning 2.0",
                )

    def check_yaml(self, document: YamlDocument) -> None:
        if self.yaml_config is not None and not lightning_at_least(self.yaml_config, "2.0"):
            return
        trainer = document.find("trainer")
        entry = trainer.child(_SAMPLER_OLD) if trainer is not None else None
        if trainer is None or entry is None:
            return
        message = (
            f"`{document.trainer_label}replace_sampler_ddp` was renamed `use_distributed_sampler` "
            f"in Lightning 2.0 ({document.rejects_key})"
        )
        if trainer.child(_SAMPLER_NEW) is not None:
            self.report_yaml(
                entry.key_start, entry.key_end, message + "; remove one of the two keys"
            )
            return
        self.report_yaml(
            entry.key_start,
            entry.key_end,
            message,
            edits=[Edit(entry.key_start, entry.key_end, _SAMPLER_NEW)],
        )


def _written_for_lightning1(call: cst.Call) -> str | None:
    """The first argument of a Trainer call that only Lightning 1.x accepts (None: none)."""
    for arg in call.args:
        if arg.keyword is None:
            continue
        name = arg.keyword.value
        if name in _LIGHTNING1_ONLY:
            return name
        if name == "accelerator":
            value = arg.value
            options = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
            if any(string_value(option) in _LIGHTNING1_ACCELERATORS for option in options):
                return name
    return None


def _asks_for_tpus(call: cst.Call) -> bool:
    """A Trainer call that passes Lightning 1's TPU argument (`tpu_cores=8`,
    `tpu_cores=args.tpu_cores`; not the literal None or 0, which ask for none)."""
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value not in LEGACY_TPU_KEYWORDS:
            continue
        value = arg.value
        if isinstance(value, cst.Name) and value.value == "None":
            continue
        if isinstance(value, cst.Integer) and value.evaluated_value == 0:
            continue
        return True
    return False
