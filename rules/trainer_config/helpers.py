"""What several Trainer-configuration rules (TPU0xx) share: the head of their examples, the
code that decides a Trainer runs on TPUs (TPU004, TPU007), the local name an attribute chain
starts from (TPU003, TPU005), and the device of the module whose method a finding is in
(TPU005, TPU006)."""

from __future__ import annotations

import libcst as cst

from tpulint.analysis.project import ClassKind
from tpulint.rule_api.cst_helpers import keyword_arg, string_value

from ..shared.matchers import LEGACY_TPU_KEYWORDS, enclosing_method, walk

_LIGHTNING_IMPORT = "import lightning as L\n\n"


def _root_local(node: cst.BaseExpression) -> str:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else ""


def _may_name_tpu(value: cst.BaseExpression) -> bool:
    """Whether an accelerator value may be "tpu": a branch of a conditional that is not a
    literal (a string other than "tpu", or None) may be."""
    if isinstance(value, cst.IfExp):
        return _may_name_tpu(value.body) or _may_name_tpu(value.orelse)
    if isinstance(value, cst.Name) and value.value == "None":
        return False
    literal = string_value(value)
    return literal is None or literal.lower() == "tpu"


def _tpu_condition(ctx, call: cst.Call) -> str:
    """The code that decides whether a Trainer runs on TPUs (`use_tpu`), for messages. An
    argument whose literal says something else (`accelerator="gpu"`) is never named as the
    one asking for TPUs."""
    for keyword in ("accelerator", *LEGACY_TPU_KEYWORDS):
        arg = keyword_arg(call, keyword)
        if arg is None:
            continue
        value = arg.value
        if isinstance(value, cst.IfExp):
            if keyword == "accelerator" and not _may_name_tpu(value):
                # `accelerator="dp" if num_gpus > 1 else None`: neither branch asks for
                # TPUs, so its test is not what decides it (another argument is).
                continue
            return f"`{ctx.module.code_for_node(value.test)}`"
        literal = string_value(value)
        if keyword == "accelerator" and literal is not None and literal.lower() != "tpu":
            continue
        if keyword == "accelerator" and isinstance(value, cst.Name):
            # `accelerator, devices = settings(args)` with one of its returns "tpu"
            return f'`{value.value}` is "tpu"'
        return f"`{keyword}={ctx.module.code_for_node(value)}` asks for TPUs"
    return "its arguments ask for TPUs"


# Hooks that run before Lightning has moved the module to its device.
_PRE_MOVE_METHODS = frozenset(
    {
        "__init__",
        "setup",
        "prepare_data",
        "configure_model",
        "configure_sharded_model",
        "on_load_checkpoint",
        "load_state_dict",
        "__new__",
        "__post_init__",
        "teardown",
        "state_dict",
        "on_save_checkpoint",
        "train_dataloader",
        "val_dataloader",
        "test_dataloader",
        "predict_dataloader",
    }
)


def _first_param(method: cst.FunctionDef) -> str | None:
    params = [*method.params.posonly_params, *method.params.params]
    if not params:
        return None
    for decorator in method.decorators:
        if isinstance(decorator.decorator, cst.Name) and decorator.decorator.value in (
            "staticmethod",
            "classmethod",
        ):
            return None
    return params[0].name.value


def _param_names(method: cst.FunctionDef) -> set[str]:
    params = method.params
    return {p.name.value for p in [*params.posonly_params, *params.params, *params.kwonly_params]}


def device_expression(ctx) -> tuple[str | None, str]:
    """The expression for "the device Lightning put this module on" where the walk is:
    (`self.device` in LightningModule methods, `pl_module.device` in callback hooks, None),
    and why there is none."""
    klass, method = enclosing_method(ctx)
    if klass is None or method is None:
        return None, "outside a Lightning class"
    if method.name.value in _PRE_MOVE_METHODS:
        return None, f"in `{method.name.value}`, before Lightning moves the module to its device"
    kind = klass.kind
    if kind & ClassKind.LIGHTNING_MODULE and _first_param(method) == "self":
        if _rebinds(method, "self"):
            return None, "`self` is rebound"
        return "self.device", ""
    if kind & ClassKind.CALLBACK and "pl_module" in _param_names(method):
        return "pl_module.device", ""
    return None, "no module at hand"


def _rebinds(method: cst.FunctionDef, name: str) -> bool:
    for node in walk(method.body):
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = (
                [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            )
            if any(isinstance(t, cst.Name) and t.value == name for t in targets):
                return True
    return False


# --- LightningCLI defaults and strategies ---------------------------------------------------

# Lightning's non-XLA strategies, by registered name and by class (a strategy for GPUs or
# CPUs: Lightning's XLA accelerator refuses them).
NON_XLA_STRATEGY_NAMES = frozenset(
    {
        "ddp",
        "ddp_spawn",
        "ddp_fork",
        "ddp_notebook",
        "ddp_find_unused_parameters_true",
        "ddp_find_unused_parameters_false",
        "ddp_spawn_find_unused_parameters_true",
        "ddp_spawn_find_unused_parameters_false",
        "dp",
        "fsdp",
        "fsdp_cpu_offload",
        "deepspeed",
        "deepspeed_stage_1",
        "deepspeed_stage_2",
        "deepspeed_stage_2_offload",
        "deepspeed_stage_3",
        "deepspeed_stage_3_offload",
        "deepspeed_stage_3_offload_nvme",
        "single_device",
    }
)
NON_XLA_STRATEGY_CLASSES = frozenset(
    {
        "DDPStrategy",
        "DDPSpawnStrategy",
        "DataParallelStrategy",
        "FSDPStrategy",
        "DeepSpeedStrategy",
        "SingleDeviceStrategy",
        "ModelParallelStrategy",
    }
)


def cli_trainer_defaults(ctx, call: cst.Call) -> dict[str, cst.BaseExpression]:
    """The Trainer arguments a LightningCLI gets as defaults from code:
    `parser.set_defaults({"trainer.strategy": ...})` (in `add_arguments_to_parser`) and
    `LightningCLI(..., trainer_defaults={"strategy": ...})`, by argument name."""
    out: dict[str, cst.BaseExpression] = {}
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "set_defaults":
        for arg in call.args:
            if arg.keyword is None and isinstance(arg.value, cst.Dict):
                for element in arg.value.elements:
                    if not isinstance(element, cst.DictElement):
                        continue
                    key = string_value(element.key)
                    if key is not None and key.startswith("trainer."):
                        out[key.split(".", 1)[1]] = element.value
        return out
    qualified = ctx.qualify(func) or ""
    if qualified.rsplit(".", 1)[-1] == "LightningCLI" or (
        isinstance(func, cst.Name) and func.value.endswith("CLI")
    ):
        defaults = keyword_arg(call, "trainer_defaults")
        if defaults is not None and isinstance(defaults.value, cst.Dict):
            for element in defaults.value.elements:
                if isinstance(element, cst.DictElement):
                    key = string_value(element.key)
                    if key is not None:
                        out[key] = element.value
    return out


def non_xla_strategy(ctx, value: cst.BaseExpression) -> str | None:
    """The name of a strategy that is not XLA's (`"ddp"`, `DDPStrategy(...)`, a
    `{"class_path": "...DDPStrategy"}` dict), or None (XLA's, or not known)."""
    text = string_value(value)
    if text is not None:
        return text if text.lower() in NON_XLA_STRATEGY_NAMES else None
    if isinstance(value, cst.Dict):
        for element in value.elements:
            if isinstance(element, cst.DictElement) and string_value(element.key) == "class_path":
                path = string_value(element.value) or ""
                name = path.rsplit(".", 1)[-1]
                return name if name in NON_XLA_STRATEGY_CLASSES else None
        return None
    func = value.func if isinstance(value, cst.Call) else value
    qualified = ctx.qualify(func)
    if qualified is None:
        return None
    root, _, _ = qualified.partition(".")
    name = qualified.rsplit(".", 1)[-1]
    if root in ("lightning", "pytorch_lightning", "lightning_fabric") and (
        name in NON_XLA_STRATEGY_CLASSES
    ):
        return name
    return None


def explicit_accelerator(ctx, value: cst.BaseExpression | None) -> str | None:
    """The accelerator a Trainer argument names: "tpu", "auto" (also when missing), another
    literal ("gpu"), or None when the file cannot tell."""
    if value is None:
        return "auto"
    text = string_value(value)
    if text is not None:
        return text.lower()
    if isinstance(value, cst.IfExp):
        # A TPU switch (`"tpu" if cfg.use_tpu else "auto"`): the run that takes the TPU arm
        # builds the Trainer with it.
        arms = (explicit_accelerator(ctx, value.body), explicit_accelerator(ctx, value.orelse))
        if "tpu" in arms:
            return "tpu"
    return None
